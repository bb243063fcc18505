#!/usr/bin/env bash
# Runs every benchmark of the project, the baselines measured in the same
# run (Python Algorithm 2, PyTorch's policy, plain DuckDB), and prints one
# table, also written to bench/results.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
echo "bench: Go benchmarks (this takes several minutes)"
CUALAKE_ALG2_JSONL=$PWD/$out/alg2.jsonl go test -run '^$' -bench . -benchtime 1x -benchmem -timeout 60m \
  ./pipeline/... ./query/... ./trainer/ 2>&1 | tee "$out/go.txt" | grep -E '^(Benchmark|ok|FAIL|---)' || true
echo "bench: Python Algorithm 2 baseline"
python3 bench/segment_alg2.py "$out/alg2.jsonl" --mode window > "$out/alg2-window.json"
echo "bench: PyTorch policy baseline (Debian's python3-torch)"
threads=$(sed -n 's/^BenchmarkPolicyForwardBackward.* \([0-9]*\)[.0-9]* threads.*/\1/p' "$out/go.txt" | head -1)
# Debian's interpreter: python3-torch is installed for it, not for others on PATH.
py=python3; [ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" trainer/bench/policy_torch.py --threads "${threads:-1}" > "$out/torch.json" || echo '{}' > "$out/torch.json"
go run bench/report.go "$out" bench/results.md
