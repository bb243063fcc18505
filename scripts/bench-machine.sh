#!/usr/bin/env bash
# Prints the machine header of bench/results.md as key=value lines: CPU
# model, cores, BLAS, libtorch, load average (1, 5, 15 min) now.
set -euo pipefail
# the first installed package matching the patterns
pkg() { dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' "$@" 2>/dev/null | awk '$1 == "ii" {print $2, $3; exit}'; }
echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "cores=$(nproc)"
echo "os=$(. /etc/os-release && echo "$PRETTY_NAME")"
echo "blas=$(pkg 'libopenblas0*' || true)"
echo "libtorch=$(pkg 'libtorch[0-9]*' || true)"
echo "load average at start=$(cut -d' ' -f1-3 /proc/loadavg)"
echo "date=$(date -u +%FT%TZ)"
