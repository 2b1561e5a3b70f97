import sys, shutil, os
name = sys.argv[1]
src = sys.argv[2] if len(sys.argv) > 2 else "a"
if os.path.exists(name): shutil.rmtree(name)
shutil.copytree(src, name)
def sub(path, old, new, count=1):
    p = os.path.join(name, path); s = open(p).read()
    assert s.count(old) >= 1, (path, old)
    s = s.replace(old, new, count); open(p, "w").write(s)
CACHE = '''        self._buckets: dict[int, torch.Tensor] = {}

    def buckets(self, length: int) -> torch.Tensor:
        # the bucket table only depends on the length: build it once per length
        table = self._buckets.get(length)
        if table is None:
            table = relative_buckets(length, self.num_buckets, self.max_distance)
            self._buckets[length] = table
        return table
'''
NOCACHE = '''
    def buckets(self, length: int) -> torch.Tensor:
        return relative_buckets(length, self.num_buckets, self.max_distance)
'''
STATIC = "static_shapes: bool = True"
exec(open(f"/tmp/crs_p/edits/{name}.py").read())
