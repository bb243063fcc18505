#!/usr/bin/env bash
# Scaling: cost as work grows, one row per size, each measured as a whole
# process with its peak RSS from getrusage of the child (GNU time):
#   commit   bench/scale steps N: N steps rows through lake.NewReplacer
#   segment  cualake segment --mode window over N text-only trajectories
#   import   cualake import osworld-results of N episodes (PNG screenshots)
#   sample   cualake sample --sampler frontier|dtac over a pool of N tasks
#   select   the same samplers' Select alone over N pass rates in memory
#            (bench/scale select), for the sizes the stage cannot hold
#   query    cualake query of a group-by over N steps rows, against a plain
#            DuckDB process (bench/duckq) on the same files, interleaved
# Inputs are generated from fixed seeds once and cached under
# $out/scaling/input (delete a folder to regenerate it); every measured run
# works on a fresh hard-linked copy (the lake never rewrites a file in
# place), so a rerun measures the same work. Writes $out/scaling.tsv:
# family, size, wall s, user+sys s, peak RSS KiB, input bytes, note.
# BENCH_QUICK=1 runs only the two smallest sizes of each, once.
#   scripts/bench-scaling.sh [OUT]   (default bench/out)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute (BENCH_OUT may be either)
bin=$PWD/bin
root=$out/scaling
in=$root/input
run=$root/run
mkdir -p "$in"
quick=${BENCH_QUICK:-0}
# sizes FAMILY: the sizes of one family (the two smallest under BENCH_QUICK).
sizes() {
  local s
  case $1 in
    commit) s="10000 100000 1000000 10000000" ;;
    segment) s="1000 10000 100000" ;;
    import) s="100 1000 10000" ;;
    sample) s="10000 100000 1000000 10000000" ;;
    query) s="1000000 10000000 100000000" ;;
  esac
  if [ "$quick" = 1 ]; then echo "$s" | cut -d' ' -f1-2; else echo "$s"; fi
}
queryReps=3; [ "$quick" = 1 ] && queryReps=1
turns=10                   # steps per trajectory of the segment inputs
episodeSteps=10; shot=640x360   # the import inputs
go build -o "$out/scale" ./bench/scale
go build -o "$out/duckq" ./bench/duckq
go build -o "$out/fixturegen" ./pipeline/importer/internal/fixture/gen
tsv=$out/scaling.tsv
# CUALAKE_BENCH_SCALING="select query" measures only those families and
# replaces their rows of an existing scaling.tsv, keeping the others.
only=${CUALAKE_BENCH_SCALING:-}
want() { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }
if [ -n "$only" ] && [ -f "$tsv" ]; then
  awk -F'\t' -v only=" $only " '/^#|^family/ { print; next } { f = $1; sub(/-(out|frontier|dtac|duckdb)$/, "", f); if (index(only, " " f " ") == 0) print }' "$tsv" > "$tsv.keep"
  echo "# $only re-measured: load average at start: $(cut -d' ' -f1-3 /proc/loadavg); date: $(date -u +%FT%TZ)" >> "$tsv.keep"
  mv "$tsv.keep" "$tsv"
else
{ echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); date: $(date -u +%FT%TZ); quick: $quick; turns: $turns; episode steps: $episodeSteps at $shot"
  echo -e "family\tsize\twall_s\tcpu_s\tmaxrss_kib\tinput_bytes\tnote"; } > "$tsv"
fi

# measure FAMILY SIZE INPUT NOTE CMD...: one timed child process, its
# output kept in $root/FAMILY-SIZE.log.
measure() {
  local fam=$1 n=$2 input=$3 note=$4; shift 4
  local bytes=0
  [ -n "$input" ] && bytes=$(du -sb "$input" | cut -f1)
  if ! /usr/bin/time -o "$root/.time" -f '%e %U %S %M' "$@" > "$root/$fam-$n.log" 2>&1; then
    echo "bench-scaling: $fam $n failed: see $root/$fam-$n.log" >&2
    echo -e "$fam\t$n\t\t\t\t$bytes\tfailed: $(tail -1 "$root/$fam-$n.log" | tr '\t' ' ')" >> "$tsv"
    return 0
  fi
  local wall user sys rss
  read -r wall user sys rss < "$root/.time"
  echo -e "$fam\t$n\t$wall\t$(echo "$user + $sys" | bc)\t$rss\t$bytes\t$note" >> "$tsv"
  echo "bench-scaling: $fam $n: $wall s, $((rss / 1024)) MiB"
}

# fits FAM N: whether N is worth running, judged from FAM's two largest
# measured sizes: peak RSS extrapolated to N at the growth seen between
# them (linear in N where only one size is measured) must stay under
# CUALAKE_BENCH_MAX_RSS_GIB (default 8: the machine has 24 GiB, shared
# with other agents). If not, a row says why and nothing runs.
maxRSS=$(( ${CUALAKE_BENCH_MAX_RSS_GIB:-8} * 1024 * 1024 ))   # KiB
fits() {
  local fam=$1 n=$2 prev
  prev=$(awk -F'\t' -v f="$fam" '$1 == f && $5 != "" { ps = s; pr = r; s = $2; r = $5 } END { if (s) print s, r, ps, pr }' "$tsv")
  [ -z "$prev" ] && return 0
  local ps pr pps ppr proj how
  read -r ps pr pps ppr <<< "$prev"
  if [ -n "$pps" ] && [ "$pps" -lt "$ps" ] && [ "$ppr" -gt 0 ]; then
    # growth per factor of size, at least flat: pr * (pr/ppr)^(log(n/ps)/log(ps/pps))
    proj=$(awk -v n="$n" -v s="$ps" -v r="$pr" -v s0="$pps" -v r0="$ppr" \
      'BEGIN { g = r / r0; if (g < 1) g = 1; printf "%d", r * exp(log(g) * log(n / s) / log(s / s0)) }')
    how="its growth from $pps to $ps gives"
  else
    proj=$(echo "$pr * $n / $ps" | bc)
    how="linear in N gives"
  fi
  [ "$proj" -le "$maxRSS" ] && return 0
  echo -e "$fam\t$n\t\t\t\t\tnot run: peak RSS $((pr / 1024)) MiB at $ps, $how about $((proj / 1024 / 1024)) GiB, over the ${CUALAKE_BENCH_MAX_RSS_GIB:-8} GiB limit (CUALAKE_BENCH_MAX_RSS_GIB) on this 24 GiB machine shared with other agents" >> "$tsv"
  echo "bench-scaling: $fam $n not run: projected $((proj / 1024 / 1024)) GiB"
  return 1
}

# fresh SRC: a hard-linked copy of a cached input lake at $run.
fresh() { rm -rf "$run"; cp -al "$1" "$run"; }

# cached DIR CMD...: build an input once (DIR/.built marks it complete).
cached() {
  local dir=$1; shift
  [ -f "$dir/.built" ] && return 0
  echo "bench-scaling: generating $dir"
  rm -rf "$dir"; mkdir -p "$dir"
  "$@" > "$dir.gen.log" 2>&1 || { echo "bench-scaling: generating $dir failed: see $dir.gen.log" >&2; exit 1; }
  touch "$dir/.built"
}

want commit && for n in $(sizes commit); do
  fits commit "$n" || continue
  rm -rf "$run"
  measure commit "$n" "" "" "$out/scale" steps "$n" "$run"
  echo -e "commit-out\t$n\t\t\t\t$(du -sb "$run" | cut -f1)\tlake written" >> "$tsv"
done

want segment && for n in $(sizes segment); do
  fits segment "$n" || continue
  cached "$in/segment-$n" "$out/scale" rollouts "$n" "$turns" "$in/segment-$n/lake"
  fresh "$in/segment-$n/lake"
  measure segment "$n" "$in/segment-$n/lake" "window K=5 Delta=5, $turns turns each, 1000 image tokens a screenshot" \
    "$bin/cualake" segment --lake "$run" --mode window --image-tokens 1000 --json
done

want import && for n in $(sizes import); do
  fits import "$n" || continue
  cached "$in/import-$n" "$out/fixturegen" -episodes "$n" -steps "$episodeSteps" -size "$shot" "$in/import-$n/tree"
  rm -rf "$run"; "$bin/cualake" lake init --lake "$run" > /dev/null
  measure import "$n" "$in/import-$n/tree" "$episodeSteps steps each, PNG $shot" \
    "$bin/cualake" import osworld-results --lake "$run" --json "$in/import-$n/tree"
done

want sample && for n in $(sizes sample); do
  ok=1; fits sample-frontier "$n" || ok=0; fits sample-dtac "$n" || ok=0
  [ $ok = 1 ] || continue
  cached "$in/pool-$n" "$out/scale" pool "$n" "$in/pool-$n/lake"
  for s in frontier dtac; do
    fresh "$in/pool-$n/lake"
    measure "sample-$s" "$n" "$in/pool-$n/lake" "B=32, batch of iteration 1" \
      "$bin/cualake" sample --lake "$run" --sampler "$s" --batch 32 --seed 1 --json
  done
done

# the selection alone, over a pool in memory (no lake, no stage)
want select && for n in $(sizes sample); do
  for s in frontier dtac; do
    fits "select-$s" "$n" || continue
    measure "select-$s" "$n" "" "in memory, B=32" "$out/scale" select "$s" "$n"
  done
done

sql="select action_kind, count(*), avg(prompt_tokens) from steps group by 1 order by 1"
want query && for n in $(sizes query); do
  fits query "$n" || continue
  lakeDir=$in/query-$n/lake
  cached "$in/query-$n" "$out/scale" steps "$n" "$lakeDir"
  files=$("$bin/cualake" lake show --lake "$lakeDir" --json | python3 -c '
import json, sys
m = json.load(sys.stdin)
print(",".join("'"'"'%s/%s'"'"'" % (sys.argv[1], f["path"]) for f in m["tables"]["steps"]["files"]))' "$lakeDir")
  echo "${sql/from steps/from read_parquet([$files])}" > "$root/query-$n.sql"
  # warm-up: the files into the page cache, for both alike
  "$bin/cualake" query --lake "$lakeDir" "$sql" > /dev/null
  for r in $(seq "$queryReps"); do
    measure query "$n" "$lakeDir" "cualake query, run $r" "$bin/cualake" query --lake "$lakeDir" "$sql"
    measure query-duckdb "$n" "$lakeDir" "plain DuckDB process, run $r" "$out/duckq" "@$root/query-$n.sql"
  done
done
rm -rf "$run"
echo "bench-scaling: $tsv"
