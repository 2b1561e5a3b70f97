#!/bin/sh
# usage: mkpatch.sh ORIG_DIR NEW_DIR > x.patch   (a/ b/ prefixes, no runs/ or caches)
diff -ruN -x runs -x __pycache__ -x '*.pyc' "$1" "$2" | sed -e "s#^--- $1/#--- a/#" -e "s#^+++ $2/#+++ b/#" -e "s#^diff -ruN -x runs -x __pycache__ -x '\*.pyc' $1/\(\S*\) $2/\(\S*\)#diff -ruN a/\1 b/\2#"
