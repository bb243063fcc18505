//go:build !notorch

// The model-running half of the train and rollout commands: the
// only file of the package that imports libtorch (gotch, trainer/...). The
// torch-free build (-tags notorch, bin/cualake) has train_notorch.go
// instead and hands these commands to bin/cualake-torch (torch.go).
package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/sugarme/gotch"
	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/progress"
	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/segment"
	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer"
	"github.com/cualake/cualake/trainer/agent"
	"github.com/cualake/cualake/trainer/causal"
	"github.com/cualake/cualake/trainer/stage"
)

func init() {
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
		b, err := lake.Blob(c.Context, l, m, ck.Blob)
		if err != nil {
			return nil, fmt.Errorf("checkpoint v%d: %w", ck.Version, err)
		}
		if err := trainer.SetThreads(stage.Threads); err != nil {
			return nil, err
		}
		if err := stage.CheckCheckpoint(ck, b.Bytes); err != nil {
			return nil, fmt.Errorf("--policy checkpoint: %w", err)
		}
		model, err := causal.Load(b.Bytes, gotch.CPU)
		if err != nil {
			return nil, fmt.Errorf("checkpoint v%d: %w", ck.Version, err)
		}
		tok, name, err := stage.DefaultTokenizer()
		if err != nil {
			return nil, err
		}
		prm := segment.DefaultParams()
		prm.Mode, prm.K, prm.Delta, prm.Window = segment.Mode(c.String("context")), c.Int("k"), c.Int("delta"), c.Int("window")
		return agent.NewCausal(model, ck.Version, tok, name, prm, trainer.DefaultTemperature, c.Bool("greedy"), c.Int("redraws"))
	}
}

func runTrain(c *cli.Context) error {
	ctx := c.Context
	if _, err := parseShard(c, "train"); err != nil {
		return err
	}
	l, tx, err := beginOnSnapshot(c, "train: the lake has no snapshot")
	if err != nil {
		return err
	}
	p := stage.DefaultParams()
	p.Objective, p.Policy, p.Advantage, p.Steps, p.Batch, p.LR, p.Device, p.Seed =
		c.String("objective"), c.String("policy"), c.String("advantage"), c.Int("steps"), c.Int("batch"), c.Float64("lr"), c.String("device"), c.Int64("seed")
	switch p.Advantage {
	case "grpo", "stepo", "naive":
	default:
		return usageErr("--advantage: want grpo, stepo or naive")
	}
	if err := stage.CheckPolicy(p.Policy); err != nil {
		return usageErr("%v", err)
	}
	if p.PerTask = c.Int("per-task"); p.PerTask < 0 {
		return usageErr("--per-task is %d, want >= 0", p.PerTask)
	}
	if p.Imitate = c.String("imitate"); p.Imitate == "both" {
		p.Imitate = stage.ImitateBoth
	}
	if err := stage.CheckImitate(p.Imitate); err != nil {
		return usageErr("%v", err)
	}
	if p.Imitate != stage.ImitateBoth && p.Objective != stage.ObjectiveRFT {
		return usageErr("--imitate %s applies to --objective rft only", p.Imitate)
	}
	p.Dim, p.Layers = c.Int("dim"), c.Int("layers")
	if p.Dim < 0 || p.Dim%4 != 0 || p.Layers < 0 || p.Layers > 32 {
		return usageErr("--dim %d --layers %d: want a width that is a multiple of 4 and 1..32 layers (0: the defaults, 64 and 2)", p.Dim, p.Layers)
	}
	if (p.Dim > 0 || p.Layers > 0) && p.Objective != "sft" {
		return usageErr("--dim and --layers size the model --objective sft creates; %s continues its checkpoint's", p.Objective)
	}
	if vs := c.IntSlice("versions"); len(vs) > 0 || p.Objective == stage.ObjectiveAverage {
		if p.Objective != stage.ObjectiveAverage {
			return usageErr("--versions applies to --objective average only")
		}
		if len(vs) < 2 {
			return usageErr("--objective average: --versions names %d checkpoints, want 2 or more (--versions 2,3,4)", len(vs))
		}
		for _, v := range vs {
			if v < 0 {
				return usageErr("--versions %v: a version is >= 0", vs)
			}
			p.Versions = append(p.Versions, int32(v))
		}
		for _, f := range []string{"steps", "batch", "lr", "dropout", "per-task", "pick", "restart", "imitate", "balance", "dim", "layers", "mini-groups"} {
			if c.IsSet(f) {
				return usageErr("--%s does not apply to --objective average (no optimiser step)", f)
			}
		}
	}
	p.Dropout = stage.DefaultDropout(p.Objective)
	if p.Objective == stage.ObjectiveAverage {
		p.Dropout = 0
	}
	if c.IsSet("dropout") {
		p.Dropout = c.Float64("dropout")
	}
	if err := stage.CheckDropout(p.Objective, p.Dropout); err != nil {
		return usageErr("%v", err)
	}
	if p.Restart = c.Bool("restart"); p.Restart && p.Objective != stage.ObjectiveRFT {
		return usageErr("--restart applies to --objective rft only (sft always starts from fresh weights)")
	}
	if p.Pick = c.String("pick"); p.Pick == "random" {
		p.Pick = stage.PickRandom
	}
	if err := stage.CheckPick(p.Pick); err != nil {
		return usageErr("%v", err)
	}
	if p.Pick != stage.PickRandom && p.Objective != stage.ObjectiveRFT {
		return usageErr("--pick %s applies to --objective rft only", p.Pick)
	}
	if p.Balance = c.String("balance"); p.Balance == "none" {
		p.Balance = stage.BalanceNone
	}
	if err := stage.CheckBalance(p.Balance); err != nil {
		return usageErr("%v", err)
	}
	if p.Balance != stage.BalanceNone && p.Objective == "grpo" {
		return usageErr("--balance %s applies to --objective sft and rft (GRPO trains on whole rollout groups)", p.Balance)
	}
	p.Groups = c.Int("mini-groups")
	if p.Groups < 0 {
		return usageErr("--mini-groups is %d, want >= 0", p.Groups)
	}
	if ms := c.Int("max-stale"); ms < 0 {
		return usageErr("--max-stale is %d, want >= 0", ms)
	} else {
		p.MaxStale = int32(ms)
	}
	p = p.Resolve()
	t0 := time.Now()
	// Optimiser steps as they go: the warm start's SFT runs for minutes
	// (average has none to show).
	bar := progress.New(c.App.ErrWriter, "train "+p.Objective+": optimiser steps", p.Steps, c.Bool("json") || p.Objective == stage.ObjectiveAverage)
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
	if len(out.Groups) > 0 {
		if err := lake.AppendTable(ctx, tx, schemas.TrainGroups, out.Groups); err != nil {
			return err
		}
	}
	params := map[string]any{}
	b, _ := json.Marshal(p)
	if p.Objective == stage.ObjectiveAverage {
		b = []byte(stage.AverageParams(p)) // no optimiser step: none of its settings
	}
	_ = json.Unmarshal(b, &params)
	if out.SegmentsFrom != "" {
		params["segments"] = out.SegmentsFrom // the snapshot whose segments rows were trained on
		params["segment_mode"] = out.Mode
	}
	if out.ActionGroups > 0 {
		params["action_groups"] = out.ActionGroups
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "train", Seed: p.Seed, Inputs: []string{tx.Parent()}, Params: params})
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
			"policy": p.Policy, "items": out.Items, "tokens": out.Tokens, "trainable_tokens": out.TrainableTokens, "mode": out.Mode,
			"segments": out.SegmentsFrom, "train_seconds": out.TrainSeconds, "stale_dropped": out.Dropped, "stale_dropped_groups": out.DroppedGroups,
			"replayed_groups": out.Replayed, "lag_histogram": lagHistogram(out.Groups), "steps": len(out.Metrics), "final_loss": last.Loss,
			"imitated_demonstrations": out.Demonstrations, "imitated_successes": out.Successes, "versions": p.Versions, "iteration": out.Checkpoint.Iteration,
			"action_groups":     out.ActionGroups,
			"tokens_per_second": float64(tokens) / secs, "seconds": secs})
	}
	if p.Objective == stage.ObjectiveAverage {
		fmt.Fprintf(c.App.Writer, "averaged checkpoints %v into v%d (iteration %d)\nsnapshot %s\n", p.Versions, out.Checkpoint.Version, out.Checkpoint.Iteration, m.ID)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "trained %s v%d from %d items: %d steps, final loss %.4f, %.0f tokens/s\nsnapshot %s\n",
		p.Objective, out.Checkpoint.Version, out.Items, len(out.Metrics), last.Loss, float64(tokens)/secs, m.ID)
	if out.SegmentsFrom != "" {
		fmt.Fprintf(c.App.Writer, "  %s segments of snapshot %s: %d tokens, %d trained\n", out.Mode, out.SegmentsFrom[:12], out.Tokens, out.TrainableTokens)
	}
	return nil
}

// lagHistogram counts the kept groups by policy lag.
func lagHistogram(groups []schemas.TrainGroup) map[string]int {
	h := map[string]int{}
	for _, g := range groups {
		if g.Kept {
			h[strconv.Itoa(int(g.Lag))]++
		}
	}
	return h
}
