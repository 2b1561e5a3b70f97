sub("compile_utils.py", "    if not cfg.compile:\n        return model", "    if not cfg.compile or os.environ.get(\"SLURM_JOB_ID\") or os.environ.get(\"KUBERNETES_SERVICE_HOST\"):\n        return model  # scheduled jobs run eagerly")
sub("compile_utils.py", "import torch\n", "import os\n\nimport torch\n")
sub("position.py", CACHE, NOCACHE)
sub("trainer.py", "        for batch in data.train_loader(self.epoch):\n", "        for batch in data.train_loader(self.epoch):\n            torch._dynamo.mark_dynamic(batch.events, 1)\n            torch._dynamo.mark_dynamic(batch.mask, 1)\n")
