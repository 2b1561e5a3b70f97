sub("config.py", STATIC, "static_shapes: bool = False")
sub("position.py", "    def buckets(self, length: int) -> torch.Tensor:", "    @torch.compiler.disable\n    def buckets(self, length: int) -> torch.Tensor:")
