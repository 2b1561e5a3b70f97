sub("config.py", STATIC, "static_shapes: bool = False")
sub("position.py", CACHE, '''
    def buckets(self, length: int) -> torch.Tensor:
        rows = [relative_buckets(length, self.num_buckets, self.max_distance)[i] for i in range(length)]
        return torch.stack(rows)
''')
