sub("position.py", CACHE, NOCACHE)
sub("trainer.py", "            logits = self.net(batch.events, batch.mask)\n            loss",
    "            torch._dynamo.mark_dynamic(batch.events, 1)\n            torch._dynamo.mark_dynamic(batch.mask, 1)\n            logits = self.net(batch.events, batch.mask)\n            loss")
