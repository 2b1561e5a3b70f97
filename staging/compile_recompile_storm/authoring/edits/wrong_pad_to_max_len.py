sub("datamodule.py", "        self.collate = PadCollator(pad_to_multiple_of=cfg.pad_to_multiple_of)",
    "        # one padded length for every batch: a single static shape\n        self.collate = PadCollator(pad_to_multiple_of=cfg.max_len)")
