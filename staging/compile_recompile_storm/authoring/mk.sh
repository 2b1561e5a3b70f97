#!/bin/bash
# usage: mk.sh NAME  (diffs /tmp/crs_p/NAME against a, writes patch with a/ b/ prefixes)
cd /tmp/crs_p && rm -rf b && cp -r "$1" b && find b -name __pycache__ -prune -exec rm -rf {} \; ; find a -name __pycache__ -prune -exec rm -rf {} \; ; diff -ruN a b > "$1.patch"; rm -rf b; echo "$1.patch: $(grep -c '^[-+][^-+]' $1.patch) changed lines"
