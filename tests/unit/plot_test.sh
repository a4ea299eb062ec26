#!/bin/sh
# Runs COMMAND... (braid-plot, or braid-perf --plot) that should write PNG, then checks PNG: a PNG
# signature and a 1000 x 600 image (braid-plot's size). Exit 77 (skipped) without gnuplot.
#
#   plot_test.sh PNG COMMAND...
set -u
png=$1
shift
command -v gnuplot >/dev/null || { echo "no gnuplot: skipped"; exit 77; }
rm -f "$png"
"$@" || { echo "the command failed: $*"; exit 1; }
[ -s "$png" ] || { echo "no $png written"; exit 1; }
signature=$(od -An -tx1 -N8 "$png" | tr -d ' \n')
[ "$signature" = "89504e470d0a1a0a" ] || { echo "$png is not a PNG (starts $signature)"; exit 1; }
size=$(od -An -tu1 -j16 -N8 "$png" | awk '{print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8}')
[ "$size" = "1000x600" ] || { echo "$png is $size, not 1000x600"; exit 1; }
echo "$png: PNG, $size"
