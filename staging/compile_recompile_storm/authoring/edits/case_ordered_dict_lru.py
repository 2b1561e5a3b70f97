sub("compile_utils.py", "dynamic=False if cfg.static_shapes else None)", "dynamic=True)")
sub("position.py", "        self._buckets: dict[int, torch.Tensor] = {}", "        self._buckets: OrderedDict[int, torch.Tensor] = OrderedDict()")
sub("position.py", "import math\n", "import math\nfrom collections import OrderedDict\n")
sub("position.py", "            self._buckets[length] = table\n", "            self._buckets[length] = table\n            if len(self._buckets) > 8:\n                self._buckets.popitem(last=False)\n")
