sub("position.py", CACHE, NOCACHE)
sub("config.py", "pad_to_multiple_of: int = 0", "pad_to_multiple_of: int = 8")
