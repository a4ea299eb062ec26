#!/bin/sh
# Checks that every C++/CUDA source is clang-formatted (.clang-format at the root).
# Exit 77 (skipped) where clang-format is not installed.
root=$1
command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 77; }
cd "$root" || exit 1
bad=$(find include src tests tools bench examples -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' |
  while read -r f; do clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
if [ -n "$bad" ]; then
  echo "not clang-formatted (run clang-format -i on them):"
  echo "$bad"
  exit 1
fi
echo "all sources formatted"
