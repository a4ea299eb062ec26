#!/bin/sh
# Builds consumer.cc with the flags pkg-config gives for an installed braid, then runs it.
set -eu
prefix=$1; src=$2; out=$3
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib64/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
c++ -std=c++17 "$src/consumer.cc" -o "$out/consumer_pkgconfig" $(pkg-config --cflags --libs braid) \
  -Wl,-rpath,"$(pkg-config --variable=libdir braid)"
"$out/consumer_pkgconfig"
