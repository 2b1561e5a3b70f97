sub("config.py", "pad_to_multiple_of: int = 0", "pad_to_multiple_of: int = 32")
sub("position.py", CACHE, NOCACHE)
