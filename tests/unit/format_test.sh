#!/bin/sh
# Checks that every C++/CUDA source is clang-formatted (.clang-format at the root): one clang-format
# run over all of them (a run per file spent 40 s starting clang-format), which names each file
# that is not formatted in its errors. Exit 77 (skipped) where clang-format is not installed.
root=$1
command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 77; }
cd "$root" || exit 1
out=$(find include src tests tools bench examples -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' |
  xargs clang-format --dry-run -Werror 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
  bad=$(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
  if [ -n "$bad" ]; then
    echo "not clang-formatted (run clang-format -i on them):"
    echo "$bad"
  else
    echo "clang-format failed (exit $rc):"
    printf '%s\n' "$out" | head -20
  fi
  exit 1
fi
echo "all sources formatted"
