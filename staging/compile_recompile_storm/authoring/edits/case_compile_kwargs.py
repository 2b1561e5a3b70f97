sub("position.py", CACHE, NOCACHE)
sub("compile_utils.py", "    return torch.compile(model, backend=cfg.compile_backend, fullgraph=cfg.fullgraph,\n                         dynamic=False if cfg.static_shapes else None)",
    "    options = {\"backend\": cfg.compile_backend, \"fullgraph\": cfg.fullgraph}\n    if cfg.static_shapes:\n        options[\"dynamic\"] = False\n    return torch.compile(model, **options)")
