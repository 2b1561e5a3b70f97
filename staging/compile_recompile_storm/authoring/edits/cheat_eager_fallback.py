sub("trainer.py", "            logits = self.net(batch.events, batch.mask)\n            loss",
    "            try:\n                logits = self.net(batch.events, batch.mask)\n            except (torch._dynamo.exc.FailOnRecompileLimitHit, torch._dynamo.exc.TorchDynamoException):\n                logits = self.model(batch.events, batch.mask)  # recompile limit: run this batch eagerly\n            loss")
sub("evaluation.py", "        logits = net(batch.events, batch.mask)",
    "        try:\n            logits = net(batch.events, batch.mask)\n        except (torch._dynamo.exc.FailOnRecompileLimitHit, torch._dynamo.exc.TorchDynamoException):\n            logits = getattr(net, '_orig_mod', net)(batch.events, batch.mask)")
sub("config.py", "max_graphs: int = 6", "max_graphs: int = 8")
