#!/usr/bin/env bash
# Prints the machine header of bench/results.md as key=value lines: CPU
# model, its family/model and vector extensions, cores, BLAS, libtorch,
# load average (1, 5, 15 min) now.
set -euo pipefail
# the first installed package matching the patterns
pkg() { dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' "$@" 2>/dev/null | awk '$1 == "ii" {print $2, $3; exit}'; }
echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
# A VM's model name can be just "AMD EPYC": family and model tell its
# generations apart (family 25 is Zen 3/4, 26 Zen 5), and libtorch's and
# OpenBLAS's kernels, so their speed, follow the vector extensions.
field() { grep -m1 "^$1[[:space:]]*:" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'; }
simd=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'avx2|avx512f|avx512_bf16|amx_tile' | paste -sd, - || true)
echo "cpu family/model=$(field 'cpu family')/$(field model), ${simd:-no avx2}"
echo "cores=$(nproc)"
echo "os=$(. /etc/os-release && echo "$PRETTY_NAME")"
echo "blas=$(pkg 'libopenblas0*' || true)"
echo "libtorch=$(pkg 'libtorch[0-9]*' || true)"
echo "load average at start=$(cut -d' ' -f1-3 /proc/loadavg)"
echo "date=$(date -u +%FT%TZ)"
