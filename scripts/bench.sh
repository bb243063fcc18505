#!/usr/bin/env bash
# Runs every benchmark of the project, the baselines measured in the same
# run (Python Algorithm 2, PyTorch's causal policy, plain DuckDB), and prints one
# table, also written to bench/results.md ($BENCH_RESULTS; the raw outputs
# go to bench/out, $BENCH_OUT). BENCH_QUICK=1 runs each measurement once.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-bench/out}
results=${BENCH_RESULTS:-bench/results.md}
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute: some steps run from other folders or pass it on
# BENCH_QUICK=1: every measurement once (CI smoke); the default repeats
# each Go benchmark 5 times (-count; the report shows median and min) and
# runs the paired ones 5 times interleaved with their baseline: inside the
# benchmark (CommitVsDuckDBCopy, AnalystQueries: CUALAKE_BENCH_REPS), or
# here (scripts/bench-startup.sh).
reps=5; causalReps=7
[ "${BENCH_QUICK:-0}" = 1 ] && reps=1 && causalReps=1
export CUALAKE_BENCH_REPS=$reps
paired='CommitVsDuckDBCopy|AnalystQueries'
scripts/bench-machine.sh > "$out/machine.txt"   # before anything of ours loads the machine
# phases.tsv: each part's wall seconds, for the report's "where the time
# went" line (the 30-minute goal of make bench).
: > "$out/phases.tsv"
t0=$(date +%s); tp=$t0
phase() { local now; now=$(date +%s); printf '%s\t%s\n' "$1" $((now - tp)) >> "$out/phases.tsv"; tp=$now; }
# BENCH_NOTE: what else ran on the machine during this run, for the header
# of bench/results.md (a shared machine's wall times need it said).
if [ -n "${BENCH_NOTE:-}" ]; then printf '%s\n' "$BENCH_NOTE" > "$out/note.txt"; else rm -f "$out/note.txt"; fi
echo "bench: Go benchmarks, $reps runs each (this takes several minutes)"
# -p 1: go test runs packages in parallel by default, and two packages'
# benchmarks on 2 cores time each other.
CUALAKE_ALG2_JSONL=$out/alg2.jsonl go test -p 1 -run '^$' -bench . -skip "$paired" -benchtime 1x -count $reps -benchmem -timeout 90m \
  ./pipeline/... ./query/... 2>&1 | tee "$out/go.txt" | grep -E '^(Benchmark|ok|FAIL|---)' || true
phase "Go benchmarks"
echo "bench: paired benchmarks ($reps runs interleaved inside each)"
go test -p 1 -run '^$' -bench "$paired" -benchtime 1x -timeout 30m ./query/... 2>&1 | tee -a "$out/go.txt" | grep -E '^(Benchmark|ok|FAIL|---)' || true
phase "paired benchmarks (commit vs COPY, analyst queries)"
echo "bench: causal policy forward+backward (7 repetitions, median)"
go test -run '^$' -bench CausalForwardBackward -benchtime ${causalReps}x -timeout 30m ./trainer/causal/ 2>&1 | tee -a "$out/go.txt" | grep -E '^(Benchmark|ok|FAIL|---)' || true
phase "causal policy forward+backward"
echo "bench: Python Algorithm 2 baseline"
python3 bench/segment_alg2.py "$out/alg2.jsonl" --mode window > "$out/alg2-window.json"
echo "bench: causal policy forward+backward in PyTorch (Debian's python3-torch)"
# Debian's interpreter: python3-torch is installed for it, not for others on PATH.
py=python3; [ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" trainer/bench/causal_torch.py --threads 1 --reps $causalReps > "$out/causal-torch.json" || echo '{}' > "$out/causal-torch.json"
# the same under jemalloc without purging (PyTorch's default CPU allocator
# refaults every activation's pages; see trainer/internal/tx/alloc.go)
jem=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -f "$jem" ]; then
  MALLOC_CONF="dirty_decay_ms:-1,muzzy_decay_ms:-1" LD_PRELOAD=$jem "$py" trainer/bench/causal_torch.py --threads 1 --reps $causalReps \
    > "$out/causal-torch-jemalloc.json" || echo '{}' > "$out/causal-torch-jemalloc.json"
fi
phase "baselines (Python Algorithm 2, PyTorch)"
if [ "${CUALAKE_BENCH_SEGMENTS:-1}" = 1 ] && [ "${BENCH_QUICK:-0}" != 1 ]; then
  echo "bench: training time per segment mode (ScaleCUA Fig. 6(b), Fig. 5; builds a lake once, ~1 hour on 2 cores)"
  scripts/bench-segments.sh "$out" > "$out/segments.log" 2>&1 || echo "bench-segments failed: see $out/segments.log"
fi
phase "segment modes (scripts/bench-segments.sh)"
echo "bench: start-up of whole processes, against plain DuckDB ($reps runs interleaved)"
scripts/bench-startup.sh "$out" "$reps"
phase "start-up"
echo "bench: scaling tables (whole processes by size; inputs cached under $out/scaling/input)"
scripts/bench-scaling.sh "$out"
phase "scaling tables"
go run bench/report.go "$out" "$results"
