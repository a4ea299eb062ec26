#!/bin/sh
# Runs COPIES processes of the gpu test binary at once on this machine's GPUs, each with the same
# gtest FILTER, and fails if any of them fails: the situation (ctest -j on one GPU) in which the
# tests once raced their own buffers (gpu_world.h). Exit 77 (skipped) where no test found a GPU.
#
#   concurrent_processes.sh BINARY COPIES FILTER [OUTDIR]
set -u
bin=$1 copies=$2 filter=$3 out=${4:-${TMPDIR:-/tmp}}
status=0
pids=""
i=1
while [ "$i" -le "$copies" ]; do
  "$bin" --gtest_filter="$filter" >"$out/gpu-concurrent-$$-$i.log" 2>&1 &
  pids="$pids $!"
  i=$((i + 1))
done
i=1
for pid in $pids; do
  wait "$pid" || status=1
  log="$out/gpu-concurrent-$$-$i.log"
  echo "=== copy $i: $(grep -E '^\[  (PASSED|FAILED)  \]' "$log" | tr '\n' ' ')"
  grep -E 'Failure|is .*, expected|FAILED' "$log" | head -20
  i=$((i + 1))
done
if [ "$status" -eq 0 ] && ! grep -q '^\[       OK \]' "$out"/gpu-concurrent-$$-*.log; then
  echo "no CUDA device: every case skipped"
  status=77
fi
rm -f "$out"/gpu-concurrent-$$-*.log
exit $status
