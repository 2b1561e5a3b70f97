sub("config.py", STATIC, "static_shapes: bool = False")
sub("position.py", "        table = self._buckets.get(length)", "        if torch.compiler.is_compiling():\n            return relative_buckets(length, self.num_buckets, self.max_distance)\n        table = self._buckets.get(length)")
