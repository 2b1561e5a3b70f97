sub("config.py", STATIC, "static_shapes: bool = False")
sub("position.py", CACHE, NOCACHE)
sub("model.py", "        self.head = nn.Linear(cfg.d_model, cfg.n_classes)\n", "        self.head = nn.Linear(cfg.d_model, cfg.n_classes)\n        self._bias: dict[int, torch.Tensor] = {}\n")
sub("model.py", "        bias = self.rel_bias(events.shape[1])", "        t = events.shape[1]\n        if t not in self._bias:\n            self._bias[t] = self.rel_bias(t)\n        bias = self._bias[t]")
