sub("compile_utils.py", "dynamic=False if cfg.static_shapes else None)", "dynamic=True)")
sub("position.py", CACHE, "")
sub("position.py", "self.embed(self.buckets(length))", "self.embed(relative_buckets(length, self.num_buckets, self.max_distance))")
