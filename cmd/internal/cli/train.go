package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/progress"
	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/segment"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer/agent"
	"github.com/cualake/cualake/trainer/policy"
	"github.com/cualake/cualake/trainer/stage"
)

func init() {
	register(&cli.Command{
		Name:  "train",
		Usage: "train the policy: supervised warm start or GRPO on its rollouts; commits a checkpoint",
		Description: `--objective sft clones successful warmstart demonstrations (rollout --policy oracle --source warmstart);
--objective grpo runs the clipped surrogate (eps_low 0.2, eps_high 0.28, ratio cap 3, KL 1e-4 to the warm-started
policy) on the newest iteration's rollouts, with group advantages (grpo), A_i/|T_i| per step (stepo) or naive reuse.
Checkpoints are blobs with a checkpoints row; train_metrics gets one row per optimiser step.

Example:
   cualake train --objective sft --steps 300
   cualake train --objective grpo --advantage stepo --steps 20 --json`,
		Flags: []cli.Flag{lakeFlag, jsonFlag, shardFlag,
			&cli.StringFlag{Name: "in", Usage: "input snapshot (default main)"},
			&cli.StringFlag{Name: "objective", Value: "sft", Usage: "sft or grpo"},
			&cli.StringFlag{Name: "advantage", Value: "grpo", Usage: "grpo, stepo or naive"},
			&cli.IntFlag{Name: "steps", Value: 200, Usage: "optimiser steps"},
			&cli.IntFlag{Name: "batch", Value: 32, Usage: "items per mini-batch"},
			&cli.Float64Flag{Name: "lr", Usage: "learning rate (default 1e-3 for sft, 1e-4 for grpo)"},
			&cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu or cuda"},
			&cli.Int64Flag{Name: "seed", Usage: "seed of initial weights and batch order"},
		},
		Action: runTrain,
	})
	checkpointPolicy = func(c *cli.Context, l *lake.Lake, m *lake.Manifest, version string) (rollout.AgentFactory, error) {
		if m == nil {
			return nil, fmt.Errorf("--policy checkpoint: the lake has no snapshot")
		}
		v := int32(-1)
		if version != "" {
			n, err := strconv.Atoi(version)
			if err != nil {
				return nil, usageErr("--policy checkpoint:%s: the version must be a number", version)
			}
			v = int32(n)
		}
		ck, err := stage.LatestCheckpoint(c.Context, l, m, v)
		if err != nil {
			return nil, err
		}
		if ck == nil {
			return nil, fmt.Errorf("--policy checkpoint: no checkpoint yet (run train --objective sft)")
		}
		p, err := stage.LoadPolicy(c.Context, l, m, ck, "cpu")
		if err != nil {
			return nil, err
		}
		return agent.NewCheckpoint(p, ck.Version, policy.DefaultSampleOptions(), c.Bool("greedy")), nil
	}
}

func runTrain(c *cli.Context) error {
	ctx := c.Context
	if _, err := parseShard(c, "train"); err != nil {
		return err
	}
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	tx, err := l.Begin(ctx, c.String("in"))
	if err != nil {
		return err
	}
	if tx.Parent() == "" {
		return fmt.Errorf("train: the lake has no snapshot")
	}
	p := stage.DefaultParams()
	p.Objective, p.Advantage, p.Steps, p.Batch, p.LR, p.Device, p.Seed =
		c.String("objective"), c.String("advantage"), c.Int("steps"), c.Int("batch"), c.Float64("lr"), c.String("device"), c.Int64("seed")
	switch p.Advantage {
	case "grpo", "stepo", "naive":
	default:
		return usageErr("--advantage: want grpo, stepo or naive")
	}
	t0 := time.Now()
	// Optimiser steps as they go: the warm start's SFT runs for minutes.
	bar := progress.New(os.Stderr, "train "+p.Objective+": optimiser steps", p.Steps, c.Bool("json"))
	p.Progress = func(done, total int) {
		bar.SetTotal(total)
		bar.Add(1)
	}
	out, err := stage.Run(ctx, l, tx.Base(), p)
	bar.Done()
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	if err := lake.AppendTable(ctx, tx, schemas.Blobs, []schemas.Blob{out.Blob}); err != nil {
		return err
	}
	if err := lake.AppendTable(ctx, tx, schemas.Checkpoints, []schemas.Checkpoint{out.Checkpoint}); err != nil {
		return err
	}
	if err := lake.AppendTable(ctx, tx, schemas.TrainMetrics, out.Metrics); err != nil {
		return err
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "train", Seed: p.Seed, Inputs: []string{tx.Parent()}, Params: p})
	if err != nil {
		return err
	}
	var tokens int64
	last := schemas.TrainMetric{}
	for _, mt := range out.Metrics {
		tokens += mt.Tokens
		last = mt
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"snapshot": m.ID, "version": out.Checkpoint.Version, "objective": p.Objective,
			"items": out.Items, "stale_dropped": out.Dropped, "steps": len(out.Metrics), "final_loss": last.Loss,
			"tokens_per_second": float64(tokens) / secs, "seconds": secs})
	}
	fmt.Fprintf(c.App.Writer, "trained %s v%d from %d items: %d steps, final loss %.4f, %.0f tokens/s\nsnapshot %s\n",
		p.Objective, out.Checkpoint.Version, out.Items, len(out.Metrics), last.Loss, float64(tokens)/secs, m.ID)
	return nil
}

// checkpointTokenizer loads the vocabulary of a checkpoint (newest, or the
// given version) as the segment stage's tokenizer.
func checkpointTokenizer(c *cli.Context, l *lake.Lake, m *lake.Manifest, version string) (tokenizer.Encoder, segment.TokenizerInfo, error) {
	v := int32(-1)
	if version != "" {
		n, err := strconv.Atoi(version)
		if err != nil {
			return nil, segment.TokenizerInfo{}, usageErr("--tokenizer checkpoint:%s: the version must be a number", version)
		}
		v = int32(n)
	}
	ck, err := stage.LatestCheckpoint(c.Context, l, m, v)
	if err != nil {
		return nil, segment.TokenizerInfo{}, err
	}
	if ck == nil {
		return nil, segment.TokenizerInfo{}, fmt.Errorf("--tokenizer checkpoint: the snapshot has no checkpoint")
	}
	b, err := lake.Blob(c.Context, l, m, ck.Blob)
	if err != nil {
		return nil, segment.TokenizerInfo{}, err
	}
	vocab, err := policy.VocabFromCheckpoint(b.Bytes)
	if err != nil {
		return nil, segment.TokenizerInfo{}, err
	}
	nl, ok := vocab.TokenID("nl")
	if !ok {
		return nil, segment.TokenizerInfo{}, fmt.Errorf("checkpoint v%d: its vocabulary has no newline token", ck.Version)
	}
	return lineVocab{vocab, nl}, segment.TokenizerInfo{File: fmt.Sprintf("checkpoint:v%d", ck.Version), SHA256: ck.Blob}, nil
}

// lineVocab gives the policy's word-level vocabulary a newline token, which
// the chat template needs between a turn's header and its content.
type lineVocab struct {
	*policy.Vocab
	nl int32
}

func (v lineVocab) Encode(s string) []int32 {
	var out []int32
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			out = append(out, v.nl)
		}
		out = append(out, v.Vocab.Encode(line)...)
	}
	return out
}
