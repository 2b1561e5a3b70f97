sub("position.py", CACHE, NOCACHE)
sub("config.py", STATIC, "static_shapes: bool = bool(int('0'))")
