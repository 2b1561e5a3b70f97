sub("trainer.py", "            self.optimizer.step()\n", "            self.optimizer.step()\n            torch._dynamo.reset()  # start every step with an empty code cache\n")
sub("trainer.py", "        for batch in data.train_loader(self.epoch):\n", "        for batch in data.train_loader(self.epoch):\n            torch._dynamo.reset()\n")
sub("evaluation.py", "    for batch in loader:\n", "    for batch in loader:\n        torch._dynamo.reset()\n")
sub("config.py", "max_graphs: int = 6", "max_graphs: int = 100000")
