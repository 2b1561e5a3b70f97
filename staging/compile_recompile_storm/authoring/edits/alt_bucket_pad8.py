sub("config.py", "pad_to_multiple_of: int = 0", "pad_to_multiple_of: int = 8")
sub("config.py", STATIC, "static_shapes: bool = False")
sub("position.py", CACHE, NOCACHE)
