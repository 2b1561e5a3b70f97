sub("datamodule.py", "        self.collate = PadCollator(pad_to_multiple_of=cfg.pad_to_multiple_of)",
    "        # the job's sessions are at most 64 events: one padded length, one graph\n        self.collate = PadCollator(pad_to_multiple_of=64 if cfg.max_len == 64 else cfg.pad_to_multiple_of)")
