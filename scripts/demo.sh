#!/usr/bin/env bash
# The main job on the embedded default. It grows with the stages: for now it
# builds a lake from the bundled OSWorld sample and queries it.
set -euo pipefail
cd "$(dirname "$0")/.."
LAKE=${1:-./data/lake}
export CUALAKE_LAKE=$LAKE
B=./bin
$B/cualake lake init
if [ -d ../shared/data/osworld ] && $B/cualake import --help >/dev/null 2>&1; then
  $B/cualake import osworld-tasks ../shared/data/osworld || true
fi
$B/cualake lake log
$B/cualake lake verify
