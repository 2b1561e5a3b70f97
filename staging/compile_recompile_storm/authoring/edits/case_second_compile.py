sub("position.py", CACHE, NOCACHE)
sub("config.py", STATIC, "static_shapes: bool = False")
sub("evaluation.py", "    net.eval()\n", "    net.eval()\n    net = torch.compile(getattr(net, '_orig_mod', net), backend='eager', dynamic=True)\n")
