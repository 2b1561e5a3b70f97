sub("config.py", STATIC, "static_shapes: bool = False")
