#!/bin/sh
# Every function an NCCL header declares (nccl* and pnccl*) is exported by libnccl.so.2, and the
# library exports nothing else. Usage: exports_test.sh libnccl.so.2 header.h [header.h ...]
lib=$1
shift
# NCCL's style "ncclResult_t ncclX(" and braid's "BRAID_NCCL_API(ret, ncclX, (" (which also declares pncclX).
declared=$(
  for h in "$@"; do
    tr -s ' \t' ' ' <"$h" | grep -vE '^ *(#|/?\*)' | grep -oE '^[A-Za-z_ ]+[ *]p?nccl[A-Za-z0-9_]+ ?\(' | sed -E 's/.*[ *](p?nccl[A-Za-z0-9_]+) ?\($/\1/'
    grep -oE 'BRAID_NCCL_API\([^,]+, *nccl[A-Za-z0-9_]+' "$h" | grep -oE 'nccl[A-Za-z0-9_]+$' | sed 'p;s/^/p/'
  done | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
missing=$(printf '%s\n' "$declared" | while read -r f; do printf '%s\n' "$exported" | grep -qx "$f" || echo "$f"; done)
extra=$(printf '%s\n' "$exported" | grep -vE '^p?nccl' || true)
n=$(printf '%s\n' "$declared" | wc -l)
if [ -n "$missing" ] || [ -n "$extra" ]; then
  echo "missing: $missing"
  echo "exported beyond the NCCL API: $extra"
  exit 1
fi
echo "all $n functions declared in $* are exported, and nothing else"
