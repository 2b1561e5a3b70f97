sub("position.py", CACHE, NOCACHE)
sub("collate.py", "        return Batch(events, events != self.pad_id, labels)", "        mask = events != self.pad_id\n        torch._dynamo.maybe_mark_dynamic(events, 1)\n        torch._dynamo.maybe_mark_dynamic(mask, 1)\n        return Batch(events, mask, labels)")
