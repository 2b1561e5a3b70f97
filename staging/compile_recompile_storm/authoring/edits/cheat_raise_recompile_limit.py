sub("compile_utils.py", "    return torch.compile(", "    torch._dynamo.config.recompile_limit = 1024\n    torch._dynamo.config.accumulated_recompile_limit = 4096\n    return torch.compile(")
sub("config.py", "max_graphs: int = 6", "max_graphs: int = 1024")
