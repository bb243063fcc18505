#!/usr/bin/env bash
# The RL loop as separate jobs, one stage binary per step, each reading the
# snapshot the previous one committed (--in) and committing the next. This
# is what a CI system runs as a pipeline of jobs; github-actions.yml is the
# same as a GitHub Actions workflow.
#
#   examples/ci/stages.sh LAKE [ITERATIONS] [LIMIT_TASKS]
#
# Binaries come from `make build` (./bin) or $CUALAKE_BIN. It runs the
# causal policy (the only one): oracle demonstrations, segment, SFT on the
# segments rows, rollouts of the checkpoint, then per iteration sample,
# rollout, segment and GRPO on the new rows. Rollouts render screenshots
# (the policy reads them) and act in the context segment rebuilds
# (window, K = Delta = 5).
set -euo pipefail
LAKE=${1:?usage: stages.sh LAKE [ITERATIONS] [LIMIT_TASKS]}
ITERATIONS=${2:-2}
LIMIT=${3:-0}
BIN=${CUALAKE_BIN:-./bin}
export CUALAKE_LAKE=$LAKE
limit=()
[ "$LIMIT" -gt 0 ] && limit=(--limit-tasks "$LIMIT")
head() { "$BIN/cualake" lake log --json --limit 1 | sed -n 's/.*"id": "\([0-9a-f]*\)".*/\1/p' | sed -n 1p; }
context=(--context window --k 5 --delta 5)
segment=(--mode window --k 5 --delta 5 --view pointer --image-tokens 8)

"$BIN/cualake" lake init
"$BIN/cualake" simdesk pool
"$BIN/rollout" --in "$(head)" --policy oracle --source warmstart --split train --n 1 --seed 2 "${limit[@]}"
"$BIN/segment" --in "$(head)" "${segment[@]}"
"$BIN/train" --in "$(head)" --objective sft --steps "${SFT_STEPS:-200}" --batch "${SFT_BATCH:-8}" --lr 0.01 --seed 3
"$BIN/rollout" --in "$(head)" --policy checkpoint --split train --n 2 --iteration 0 "${context[@]}" --seed 4 --max-turns 20 "${limit[@]}"
for it in $(seq 1 "$ITERATIONS"); do
  "$BIN/sample" --in "$(head)" --sampler frontier --batch "${BATCH:-4}" --p-min 0 --p-max 1 --seed $((200 + it))
  "$BIN/rollout" --in "$(head)" --policy checkpoint --n 4 "${context[@]}" --seed $((300 + it)) --max-turns 20
  "$BIN/segment" --in "$(head)" "${segment[@]}"
  "$BIN/train" --in "$(head)" --objective grpo --advantage grpo --steps 4 --lr 0.0001 --seed $((400 + it))
done
"$BIN/audit" health --in "$(head)"
"$BIN/cualake" lake verify
