#!/usr/bin/env bash
# Start-up of whole processes: the torch-free bin/cualake on commands that
# never load a model, bin/cualake-torch on the same (what every command cost
# before the split), and `cualake query` of a small group-by over a demo lake
# against a plain DuckDB process (bench/duckq) on the same Parquet files.
# Runs are interleaved (ours, baseline, ours, ...) after one warm-up each;
# writes one line per run to $out/startup.tsv: name, wall s, user+sys s,
# peak RSS KiB (getrusage of the child, via GNU time).
#   scripts/bench-startup.sh [OUT] [REPS]   (defaults bench/out, 5)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}; reps=${2:-5}
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute (BENCH_OUT may be either)
bin=$PWD/bin
lake=$out/startup-lake
go build -o "$out/duckq" ./bench/duckq
if [ ! -f "$lake/.built" ]; then
  # A small demo lake, built once and cached: the OSWorld tasks and a few
  # random rollouts over the simulator's tasks (tree only: no screenshots).
  rm -rf "$lake"
  "$bin/cualake" --help >/dev/null
  CUALAKE_LAKE=$lake "$bin/cualake" lake init >/dev/null
  CUALAKE_LAKE=$lake "$bin/cualake" import osworld-tasks ../shared/data/osworld >/dev/null
  CUALAKE_LAKE=$lake "$bin/cualake" simdesk pool >/dev/null
  CUALAKE_LAKE=$lake "$bin/cualake" rollout --policy random --n 4 --limit-tasks 50 --split train --tree-only --skip-unsupported --workers 1 >/dev/null 2>&1
  touch "$lake/.built"
fi
export CUALAKE_LAKE=$lake
sql="select action_kind, count(*), avg(prompt_tokens) from steps group by 1 order by 1"
files=$("$bin/cualake" lake show --json | python3 -c '
import json, sys
m = json.load(sys.stdin)
print(",".join("'"'"'%s/%s'"'"'" % (sys.argv[1], f["path"]) for f in m["tables"]["steps"]["files"]))' "$lake")
plain=${sql/from steps/from read_parquet([$files])}
# name|command: each is run by bash -c with its output discarded.
cases=(
  "help|$bin/cualake --help"
  "help (cualake-torch)|$bin/cualake-torch --help"
  "lake log|$bin/cualake lake log --limit 3"
  "import --help|$bin/cualake import --help"
  "segment --help|$bin/segment --help"
  "sample --help|$bin/sample --help"
  "audit --help|$bin/audit --help"
  "query group-by|$bin/cualake query \"$sql\""
  "query group-by (plain DuckDB)|$out/duckq \"$plain\""
  "query group-by (cualake-torch)|$bin/cualake-torch query \"$sql\""
)
tsv=$out/startup.tsv
echo -e "name\twall_s\tcpu_s\tmaxrss_kib" > "$tsv"
for c in "${cases[@]}"; do bash -c "${c#*|}" >/dev/null; done   # warm-up: page cache, DuckDB's first open
for r in $(seq "$reps"); do
  for c in "${cases[@]}"; do
    /usr/bin/time -o "$out/.time" -f '%e %U %S %M' bash -c "exec ${c#*|}" >/dev/null 2>&1 || { echo "bench-startup: ${c%%|*} failed" >&2; exit 1; }
    read -r wall user sys rss < "$out/.time"
    echo -e "${c%%|*}\t$wall\t$(echo "$user + $sys" | bc)\t$rss" >> "$tsv"
  done
done
# What the torch-free binary's RSS is made of, at main.main (after every
# package's init, before the command): anonymous memory against the
# binary's file pages mapped in.
if command -v gdb >/dev/null; then
  gdb -q -batch -ex 'break main.main' -ex 'run --help >/dev/null' \
    -ex 'python print(open("/proc/%d/smaps_rollup" % gdb.selected_inferior().pid).read())' -ex kill "$bin/cualake" 2>/dev/null \
    | grep -E '^(Rss|Anonymous|FilePmdMapped):' > "$out/smaps.txt" || true
fi
echo "bench-startup: $tsv"
