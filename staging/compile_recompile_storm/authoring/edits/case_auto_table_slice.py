sub("config.py", STATIC, "static_shapes: bool = False")
sub("position.py", CACHE, '''        self.register_buffer("table", relative_buckets(256, num_buckets, max_distance), persistent=False)

    def buckets(self, length: int) -> torch.Tensor:
        return self.table[:length, :length]
''')
