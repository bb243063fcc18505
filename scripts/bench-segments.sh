#!/usr/bin/env bash
# ScaleCUA Figure 6(b) and Figure 5 in shape, with the causal policy
# (trainer/causal) on the embedded simulator: one iteration's committed
# rollouts (a frontier batch of 32 tasks after an initial pass of 2, groups
# of 8, window context K = Delta = 5) are segmented in
# trajectory, step and window mode, and in window mode for K = Delta in
# {1, 3, 5, 8, 15}; each segmentation is trained with GRPO for the same
# optimiser steps over the same groups (mini-batches of 4 whole groups, 8
# steps: one pass over 32 groups), each in its own copy of the lake. Writes
# bench/out/segments.json: per run the segment summary and the train stage's
# items, tokens, trained tokens and optimiser wall time (train_seconds).
#
# The step and window runs (the Fig. 6(b) ratio) are then repeated,
# interleaved (step, window, step, window, ...), CUALAKE_SEG_BENCH_REPS
# times in all (5; 1 under BENCH_QUICK=1); segments.json gives each run's
# seconds and the report their median and min.
#
#   scripts/bench-segments.sh            # builds bench/out/seg-lake once (SFT + rollouts, ~10 min on 2 cores), then ~20 min
#   CUALAKE_SEG_BENCH_STEPS=4 scripts/bench-segments.sh
#   CUALAKE_SEG_BENCH_RESUME=1 scripts/bench-segments.sh   # keep the runs already written under bench/out
#   scripts/bench-segments.sh OUT        # another folder than bench/out (make bench passes $BENCH_OUT)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute (BENCH_OUT may be either)
C=${CUALAKE_BIN:-bin/cualake}
base=$out/seg-lake
steps=${CUALAKE_SEG_BENCH_STEPS:-8}
reps=${CUALAKE_SEG_BENCH_REPS:-5}
[ "${BENCH_QUICK:-0}" = 1 ] && reps=1
resume=${CUALAKE_SEG_BENCH_RESUME:-0}
# The cached lake is this build's only: rollouts of another code version
# would be other data under the same name.
version=$($C --version)
if [ ! -f "$base.ready" ] || [ "$(cat "$base.ready")" != "$version" ]; then
  rm -rf "$base"
  echo "bench-segments: building $base (warm start and one iteration of rollouts)"
  $C simdesk pool --lake "$base" > /dev/null
  $C rollout --lake "$base" --policy oracle --source warmstart --split train --n 1 --max-turns 40 --seed 1002 --workers 2 --json > /dev/null
  $C segment --lake "$base" --view pointer --image-tokens 8 --mode window --k 5 --delta 5 --json > /dev/null
  $C train --lake "$base" --objective sft --policy causal --seed 1003 --json > "$out/seg-sft.json"
  # One iteration as the loop runs it: an initial pass of 2 over the
  # training pool, a frontier batch of 32, its groups of 8. (The first 32
  # tasks of the pool, as before cualake/0.1.7, left 2 groups of mixed
  # outcome under 0.1.7's warm start: too few to train on.)
  $C rollout --lake "$base" --policy checkpoint --split train --n 2 --max-turns 30 --context window --k 5 --delta 5 \
    --iteration 0 --seed 1004 --workers 2 --json > /dev/null
  $C sample --lake "$base" --sampler frontier --batch 32 --alpha 0.2 --p-min 0.1 --p-max 0.9 --seed 1201 --json > /dev/null
  $C rollout --lake "$base" --policy checkpoint --n 8 --max-turns 30 --context window --k 5 --delta 5 \
    --iteration 1 --seed 1301 --workers 2 --json > "$out/seg-rollout.json"
  echo "$version" > "$base.ready"
fi
runs=()
one() { # name, repetition (1: the first), segment flags...
  local name=$1 rep=$2
  shift 2
  local suffix=""
  [ "$rep" = 1 ] || suffix="-r$rep"
  [ "$rep" = 1 ] && runs+=("$name")
  if [ "$resume" = 1 ] && [ -s "$out/seg-$name-train$suffix.json" ]; then
    echo "bench-segments: $name (run $rep) kept"
    return
  fi
  local lk=$out/seg-lake-$name
  rm -rf "$lk"
  cp -r "$base" "$lk"
  echo "bench-segments: $name (run $rep of ${reps})"
  $C segment --lake "$lk" --view pointer --image-tokens 8 "$@" --json > "$out/seg-$name-segment.json"
  $C train --lake "$lk" --objective grpo --groups 4 --steps "$steps" --seed 1401 --json > "$out/seg-$name-train$suffix.json.tmp"
  mv "$out/seg-$name-train$suffix.json.tmp" "$out/seg-$name-train$suffix.json"
  rm -rf "$lk"
}
one trajectory 1 --mode trajectory
one step 1 --mode step --window 5
one window 1 --mode window --k 5 --delta 5
for k in 1 3 8 15; do
  one "window-k$k" 1 --mode window --k "$k" --delta "$k"
done
for r in $(seq 2 "$reps"); do
  one step "$r" --mode step --window 5
  one window "$r" --mode window --k 5 --delta 5
done
python3 - "$out" "${runs[@]}" <<'EOF'
import json, os, sys
out, runs = sys.argv[1], sys.argv[2:]
res = {"runs": {}}
for r in runs:
    seg = json.load(open(os.path.join(out, f"seg-{r}-segment.json")))["summary"]
    tr = json.load(open(os.path.join(out, f"seg-{r}-train.json")))
    # the repetitions, in the order they ran (every run trains the same items)
    secs = [tr["train_seconds"]]
    for rep in range(2, 1000):
        p = os.path.join(out, f"seg-{r}-train-r{rep}.json")
        if not os.path.exists(p):
            break
        t = json.load(open(p))
        if (t["items"], t["tokens"], t["trainable_tokens"]) != (tr["items"], tr["tokens"], tr["trainable_tokens"]):
            sys.exit(f"bench-segments: {p} trained other items than the first run")
        secs.append(t["train_seconds"])
    res["runs"][r] = {"mode": seg["mode"], "k": seg["k"], "delta": seg["delta"], "segment_items": seg["items"],
                      "segment_tokens": seg["tokens"], "items": tr["items"], "tokens": tr["tokens"],
                      "trainable_tokens": tr["trainable_tokens"], "steps": tr["steps"],
                      "train_seconds": sorted(secs)[(len(secs) - 1) // 2], "train_seconds_runs": secs}
roll = json.load(open(os.path.join(out, "seg-rollout.json")))["summary"]
res["rollouts"] = {"trajectories": roll["trajectories"], "steps": roll["steps"], "success_rate": roll["success_rate"]}
json.dump(res, open(os.path.join(out, "segments.json"), "w"), indent=1)
print(json.dumps(res, indent=1))
EOF
