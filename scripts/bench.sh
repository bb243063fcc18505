#!/usr/bin/env bash
# Runs every benchmark of the project and prints one table.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench
go test -run '^$' -bench . -benchmem -benchtime 1x ./... 2>&1 | tee bench/out.txt
