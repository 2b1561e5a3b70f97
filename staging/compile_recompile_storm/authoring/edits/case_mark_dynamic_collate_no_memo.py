sub("position.py", CACHE, NOCACHE)
sub("collate.py", "        return Batch(events, events != self.pad_id, labels)", "        mask = events != self.pad_id\n        for t in (events, mask):\n            torch._dynamo.mark_dynamic(t, 1)\n        return Batch(events, mask, labels)")
