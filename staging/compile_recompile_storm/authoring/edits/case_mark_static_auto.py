sub("position.py", CACHE, NOCACHE)
sub("config.py", STATIC, "static_shapes: bool = False")
sub("collate.py", "        return Batch(events, events != self.pad_id, labels)", "        torch._dynamo.mark_static(labels)\n        return Batch(events, events != self.pad_id, labels)")
