sub("compile_utils.py", "dynamic=False if cfg.static_shapes else None)", "dynamic=True)")
sub("position.py", "    def __init__(self, n_heads: int, num_buckets: int, max_distance: int) -> None:",
    "    def __init__(self, n_heads: int, num_buckets: int, max_distance: int, max_len: int = 512) -> None:")
sub("position.py", CACHE, '''        # buckets depend on key - query only: the table of the longest length holds every shorter one
        self.register_buffer("table", relative_buckets(max_len, num_buckets, max_distance), persistent=False)

    def buckets(self, length: int) -> torch.Tensor:
        return self.table[:length, :length]
''')
sub("model.py", "RelativePositionBias(cfg.n_heads, cfg.rel_buckets, cfg.rel_max_distance)",
    "RelativePositionBias(cfg.n_heads, cfg.rel_buckets, cfg.rel_max_distance,\n                                             cfg.max_len + max(cfg.pad_to_multiple_of, 1))")
