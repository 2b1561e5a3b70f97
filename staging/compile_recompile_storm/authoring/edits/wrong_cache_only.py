sub("position.py", CACHE, NOCACHE)
