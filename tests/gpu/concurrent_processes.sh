#!/bin/sh
# Runs COPIES processes of the gpu test binary at once on this machine's GPUs, each with the same
# gtest FILTER, and fails if any of them fails. Exit 77 (skipped) where no test found a GPU.
#
#   concurrent_processes.sh [--hosts|--processes] BINARY COPIES FILTER [OUTDIR]
#
# One copy: the cases in one process (ctest's gpu_cases_N: one gtest shard each, GTEST_SHARD_INDEX).
# Plain: independent copies, the situation (ctest -j on one GPU) in which the tests once raced
# their own buffers (gpu_world.h). With --hosts: the copies are the pretended hosts of one job,
# copy i with BRAID_HOSTID=braid-gpu-test-host-i and BRAID_TEST_HOSTS=i:COPIES:DIR, so that each
# world's ranks are split between them and reach each other over the network (gpu_world.h). With
# --processes: the same split, but the copies are processes of one host (no BRAID_HOSTID).
# With EXPECT_LOG set, each copy that ran a case must have logged a line matching that regex; with
# REJECT_LOG set, no copy may have logged a line matching it.
# FIRST_COPY_ENV (e.g. "BRAID_NET_GDR=0"): variables for copy 0 alone (hosts that differ), with
# --hosts only; NAME=VALUE words split at spaces, so no value may hold a space or a wildcard. The
# copies' logs are kept (and their folder named) when one fails, or with KEEP_LOGS set.
set -u
hosts=0
if [ "${1:-}" = "--hosts" ]; then
  hosts=1
  shift
elif [ "${1:-}" = "--processes" ]; then
  hosts=2
  shift
fi
bin=$1 copies=$2 filter=$3 out=${4:-${TMPDIR:-/tmp}}
dir=$(mktemp -d "$out/gpu-hosts-XXXXXX") || exit 1
status=0
pids=""
i=0
while [ "$i" -lt "$copies" ]; do
  if [ "$hosts" -eq 2 ]; then
    BRAID_TEST_HOSTS=$i:$copies:$dir "$bin" --gtest_filter="$filter" >"$dir/copy-$i.log" 2>&1 &
  elif [ "$hosts" -eq 1 ]; then
    first=""
    [ "$i" -eq 0 ] && first=${FIRST_COPY_ENV:-}
    env $first BRAID_HOSTID=braid-gpu-test-host-$i BRAID_TEST_HOSTS=$i:$copies:$dir \
      "$bin" --gtest_filter="$filter" >"$dir/copy-$i.log" 2>&1 &
  else
    "$bin" --gtest_filter="$filter" >"$dir/copy-$i.log" 2>&1 &
  fi
  pids="$pids $!"
  i=$((i + 1))
done
i=0
for pid in $pids; do
  wait "$pid" || status=1
  log="$dir/copy-$i.log"
  echo "=== copy $i: $(grep -E '^\[  (PASSED|FAILED)  \]' "$log" | tr '\n' ' ')"
  grep -E 'Failure|is .*, expected|FAILED|WARN' "$log" | head -20
  if [ -n "${EXPECT_LOG:-}" ] && grep -q '^\[       OK \]' "$log" && ! grep -qE "$EXPECT_LOG" "$log"; then
    echo "copy $i's log has no line matching '$EXPECT_LOG'"
    status=1
  fi
  if [ -n "${REJECT_LOG:-}" ] && grep -qE "$REJECT_LOG" "$log"; then
    echo "copy $i's log has a line matching '$REJECT_LOG':"
    grep -E -m3 "$REJECT_LOG" "$log"
    status=1
  fi
  i=$((i + 1))
done
if [ "$status" -eq 0 ] && ! grep -q '^\[       OK \]' "$dir"/copy-*.log; then
  echo "no CUDA device: every case skipped"
  status=77
fi
if [ "$status" -eq 1 ] || [ -n "${KEEP_LOGS:-}" ]; then
  echo "logs kept in $dir"
else
  rm -rf "$dir"
fi
exit $status
