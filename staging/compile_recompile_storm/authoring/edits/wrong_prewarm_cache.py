sub("config.py", STATIC, "static_shapes: bool = False")
sub("position.py", "    def __init__(self, n_heads: int, num_buckets: int, max_distance: int) -> None:",
    "    def __init__(self, n_heads: int, num_buckets: int, max_distance: int, max_len: int = 512) -> None:")
sub("position.py", "        self._buckets: dict[int, torch.Tensor] = {}\n",
    "        # build every table before compiling: no cache miss (and no new tensor) inside the graph\n        self._buckets: dict[int, torch.Tensor] = {\n            n: relative_buckets(n, num_buckets, max_distance) for n in range(1, max_len + 1)}\n")
sub("model.py", "RelativePositionBias(cfg.n_heads, cfg.rel_buckets, cfg.rel_max_distance)",
    "RelativePositionBias(cfg.n_heads, cfg.rel_buckets, cfg.rel_max_distance, cfg.max_len)")
