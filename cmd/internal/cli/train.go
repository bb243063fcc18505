package cli

import "github.com/urfave/cli/v2"

// defaultPolicy is trainer/stage.DefaultParams().Policy, spelled here so the
// command's flags (and its --help) build without libtorch;
// TestTrainPolicyDefault keeps them equal.
const defaultPolicy = "causal"

func init() {
	register(&cli.Command{
		Name:  "train",
		Usage: "train the policy: supervised warm start or GRPO on its rollouts; commits a checkpoint",
		Description: `--objective sft imitates the successful demonstrations (oracle rollouts, or any --source warmstart
rollout; never --source eval); --objective grpo runs the clipped surrogate (eps_low 0.2, eps_high 0.28, ratio cap 3,
bounded KL 1e-4 to the warm-started policy) on its rollout groups (below), with group advantages (grpo),
A_i/|T_i| per step (stepo, aggregated by EvoCUA-1.5's eq. 13) or naive reuse, in mini-batches of whole groups.

The policy is causal (trainer/causal), a decoder-only model that trains on the segments rows as they are (any
mode: trajectory, step, window), their token ids, loss mask, recorded log-probabilities and advantages, with the
screenshots' pixels at the image tokens: run segment first (` + "`cualake segment --view pointer --image-tokens 8`" + `).
SFT and GRPO read the same item format, the segments row. The encoder-decoder (--policy encdec), which rebuilt one
item per step from steps and trees, was removed (last present in commit 7878f89): --policy encdec, and an
encoder-decoder checkpoint, are errors. Without --steps, --batch, --lr the demo's settings apply (sft: 400 x 8,
cosine schedule peaking at 1e-2, with an auxiliary next-token loss on the context tokens at weight 0.3 and dropout
0.1; grpo: 30 steps, batches of whole groups up to 32 items, 1e-4, no dropout). Dropout 0.1 suits a warm start on a
fraction of the tasks, as make demo's; with every task demonstrated, --dropout 0 held out better (cualake run's
default).

--objective rft (rejection-sampling fine-tuning, expert iteration) continues the newest checkpoint with SFT's loss
and schedule on the demonstrations and on the policy's own training rollouts the verifier scored successful (initial
pass, RL batches, recalibrations; --per-task N keeps at most N per task, picked by --seed, or with --pick shortest
the ones of fewest steps), 400 x 8 peaking at 1e-2
by default. GRPO's updates stay on the tasks it rolls out; imitating every verified success spreads them.
--imitate successes (the successes alone) and --imitate demos (the demonstrations alone: the same steps as a round,
none of the policy's data) are the two controls that say where a round's gain comes from. --restart trains fresh
weights (the newest checkpoint's width and layers, drawn from --seed) on the same data instead of continuing the
newest checkpoint, as STaR restarts each iteration from the initial model. --balance actions (sft, rft) draws the
items so that every distinct action sequence (a trajectory's trained tokens: a template of the action language)
gets an equal share of the steps, however many tasks share it; --json reports action_groups.

--objective average --versions 2,3,4 trains nothing: it commits the next checkpoint version with the mean of those
checkpoints' weights (a uniform soup of one run's rounds; the checkpoints must share size and vocabulary, as RFT
rounds that continue each other do), standing for the newest checkpoint's iteration, so that rollout --policy
checkpoint evaluates it.

Checkpoints are blobs with a checkpoints row; train_metrics gets one row per optimiser step; the commit's params
name the segments snapshot the rows came from.

Example:
   cualake segment --view pointer --image-tokens 8 && cualake train --objective sft
   cualake train --objective sft --steps 100 --batch 4 --json
   cualake train --objective sft --dim 128 --layers 3
   cualake train --objective sft --dropout 0
   cualake train --objective grpo --advantage stepo --steps 20 --json
   cualake train --objective grpo --max-stale 3 --mini-groups 4
   cualake train --objective rft --per-task 2 --json
   cualake train --objective rft --pick shortest --json
   cualake train --objective rft --imitate demos --json
   cualake train --objective rft --restart --steps 400 --json
   cualake train --objective rft --balance actions --json
   cualake train --objective average --versions 2,3,4 --json

GRPO trains on whole rollout groups: the fresh groups of the iterations rolled out since the last GRPO checkpoint,
plus the AdaPR replays the newest batch picked (their stored trajectories and segments, not rolled out again).
Groups rolled out by a policy more than --max-stale versions older than the one trained are dropped and counted;
train_groups gets one row per group considered (channel, policy lag, kept).`,
		Flags: []cli.Flag{lakeFlag, jsonFlag, shardFlag,
			&cli.StringFlag{Name: "in", Usage: "input snapshot (default main)"},
			&cli.StringFlag{Name: "objective", Value: "sft", Usage: "sft, rft, grpo or average"},
			&cli.IntSliceFlag{Name: "versions", Usage: "average: the checkpoint versions whose weights the new checkpoint averages (--versions 2,3,4)"},
			&cli.IntFlag{Name: "per-task", Usage: "rft: imitate at most N of a task's successful rollouts (0: all)"},
			&cli.IntFlag{Name: "dim", Usage: "sft: the fresh model's width (default 64; a multiple of its 4 heads; feed-forward 4x)"},
			&cli.IntFlag{Name: "layers", Usage: "sft: the fresh model's transformer layers (default 2)"},
			&cli.Float64Flag{Name: "dropout", Usage: "sft, rft: probability of zeroing an embedding or sub-layer output activation while training (default 0.1; 0: none; masks drawn from --seed; grpo: none)"},
			&cli.StringFlag{Name: "pick", Value: "random", Usage: "rft: which of a task's successes --per-task keeps: random (by --seed) or shortest (fewest steps first; EvoCUA-1.5 3.3's length preference)"},
			&cli.BoolFlag{Name: "restart", Usage: "rft: train fresh weights (drawn from --seed; the newest checkpoint's size) on the demonstrations and successes instead of continuing the newest checkpoint (STaR's restart)"},
			&cli.StringFlag{Name: "balance", Value: "none", Usage: "sft, rft: none (each item once per pass, in --seed's order) or actions (items drawn so that each distinct action sequence gets an equal share of the steps)"},
			&cli.StringFlag{Name: "imitate", Value: "both", Usage: "rft: both, successes (the policy's alone) or demos (the demonstrations alone: a control)"},
			&cli.StringFlag{Name: "policy", Value: defaultPolicy, Usage: "sft: the model to create: causal, the only one (encdec was removed after 7878f89)"},
			&cli.StringFlag{Name: "advantage", Value: "grpo", Usage: "grpo, stepo or naive"},
			&cli.IntFlag{Name: "steps", Usage: "optimiser steps (default: the demo's)"},
			&cli.IntFlag{Name: "batch", Usage: "items per mini-batch (default: the demo's)"},
			&cli.IntFlag{Name: "mini-groups", Aliases: []string{"groups"}, Usage: "grpo: every mini-batch exactly G whole rollout groups with all their items (EvoCUA-1.5 5.4), instead of whole groups packed up to --batch items"},
			&cli.IntFlag{Name: "max-stale", Value: 3, Usage: "grpo: drop groups rolled out by a policy more than this many versions older than the one trained (EvoCUA-1.5 5.2)"},
			&cli.Float64Flag{Name: "lr", Usage: "learning rate (default: the demo's)"},
			&cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu or cuda"},
			&cli.Int64Flag{Name: "seed", Usage: "seed of initial weights and batch order"},
		},
		Action: runTrain,
	})
}
