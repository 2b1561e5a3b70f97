#!/bin/sh
# usage: mkpatch.sh ORIG_DIR NEW_DIR OUT.patch  (unified diff, a/ b/ prefixes, no timestamps)
cd "$(dirname "$1")" || exit 1
A=$(basename "$1"); B_ABS=$(cd "$2" && pwd)
rm -rf /tmp/_mkp && mkdir -p /tmp/_mkp && cp -r "$1" /tmp/_mkp/a && cp -r "$B_ABS" /tmp/_mkp/b
find /tmp/_mkp -name __pycache__ -prune -exec rm -rf {} + ; rm -rf /tmp/_mkp/*/checkpoints
cd /tmp/_mkp && diff -ruN a b | sed -E 's/^(---|\+\+\+) ([^\t]+)\t.*/\1 \2/' > "$3"
