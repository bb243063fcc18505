package cli

import (
	"fmt"
	"math"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/pipeline/sample"
	"github.com/cualake/cualake/pipeline/samplersim"
	"github.com/cualake/cualake/schemas"
)

func init() {
	register(&cli.Command{
		Name:  "sample",
		Usage: "update pass-rate EMAs from the newest rollouts and pick the next batch",
		Description: `Folds the newest rolled-out iteration into each task's EMA (the first pass keeps the pool to
[p_min, p_max]), writes one pass_rates row per task, and picks B tasks for the next iteration into batches.

Example:
   cualake sample --sampler frontier --batch 32 --seed 1
   cualake sample --sampler dtac --json                 (EvoCUA-1.5's EMA, beta 0.7)
   cualake sample --sampler dtac --ema-beta 0.8 --ics-ratio 0.04 --replay-cap 3

The EMA: --sampler dtac folds rollouts in with EvoCUA-1.5's beta = 0.7 (eq. 16: P <- beta P + (1 - beta) obs),
every other sampler with ScaleCUA's alpha = 0.2 (eq. 1); --ema-beta or --alpha overrides either (not both).
The rule and value are recorded in the commit's params (ema.Rule, ema.Alpha, ema.Beta).`,
		Flags: []cli.Flag{lakeFlag, jsonFlag, shardFlag,
			&cli.StringFlag{Name: "in", Usage: "input snapshot (default main)"},
			&cli.StringFlag{Name: "sampler", Value: "frontier", Usage: "frontier, dtac, uniform, curriculum or dapo"},
			&cli.IntFlag{Name: "batch", Value: 32, Usage: "B, tasks per iteration"},
			&cli.Int64Flag{Name: "seed", Usage: "seed of every draw"},
			&cli.IntFlag{Name: "iteration", Usage: "the batch's iteration (default: one past the newest rolled-out one; the loop sets it after RFT rounds)"},
			&cli.Float64Flag{Name: "alpha", Usage: "EMA weight of the new observation (default: ScaleCUA's 0.2; dtac: 1 - beta)"},
			&cli.Float64Flag{Name: "ema-beta", Aliases: []string{"beta"}, Usage: "EvoCUA's EMA weight of the old estimate (dtac's default 0.7); sets alpha = 1 - beta"},
			&cli.Float64Flag{Name: "p-min", Value: sample.DefaultPMin, Usage: "initial pool lower bound"},
			&cli.Float64Flag{Name: "p-max", Value: sample.DefaultPMax, Usage: "initial pool upper bound"},
			&cli.Float64Flag{Name: "mu", Value: sample.DefaultFrontier().Mu, Usage: "frontier weight centre"},
			&cli.Float64Flag{Name: "sigma", Value: sample.DefaultFrontier().Sigma, Usage: "frontier weight width"},
			&cli.Float64Flag{Name: "gamma", Value: sample.DefaultFrontier().Gamma, Usage: "share of the batch drawn uniformly outside the frontier pool"},
			&cli.IntFlag{Name: "replay-cap", Value: int(sample.DefaultDTAC().MaxReplays), Usage: "dtac: replays of one buffered group before it leaves the buffer"},
			&cli.Float64Flag{Name: "ics-ratio", Value: sample.DefaultDTAC().ICSRatio, Usage: "dtac: rho_inf, ICS draws floor(rho_inf B) infeasible tasks (0.025: none below B = 40)"},
			&cli.Float64Flag{Name: "adapr-ratio", Value: sample.DefaultDTAC().AdaPRRatio, Usage: "dtac: share of the batch for AdaPR replays, floor(ratio B) slots"},
			&cli.IntFlag{Name: "max-stale", Value: int(sample.DefaultDTAC().MaxStale), Usage: "dtac: buffered groups leave once their policy version is more than this many versions old"},
		},
		Action: runSample,
	}, &cli.Command{
		Name:  "simulate",
		Usage: "simulators that help choose settings before spending GPU hours",
		Subcommands: []*cli.Command{{
			Name:  "samplers",
			Usage: "run every sampler on a synthetic learner under one budget and compare",
			Description: `The learner's model is in docs/samplers.md. Writes the series as the sampler_sim table (one commit)
and an SVG chart.

Example:
   cualake simulate samplers --seed 1 --iterations 150 --json
   cualake simulate samplers --iterations 50 --chart samplers.svg`,
			Flags: []cli.Flag{lakeFlag, jsonFlag,
				&cli.Int64Flag{Name: "seed", Value: 1, Usage: "first seed (the simulation averages over --seeds seeds)"},
				&cli.IntFlag{Name: "seeds", Value: 3, Usage: "number of seeds"},
				&cli.IntFlag{Name: "iterations", Value: 150, Usage: "iterations per run"},
				&cli.IntFlag{Name: "tasks", Value: 3000, Usage: "tasks of hidden difficulty"},
				&cli.StringFlag{Name: "chart", Value: "out/samplers.svg", Usage: "where to write the SVG chart"},
				&cli.BoolFlag{Name: "no-commit", Usage: "do not commit the table"},
			},
			Action: runSimulateSamplers,
		}},
		Description: "Example: cualake simulate samplers --json",
	})
}

func runSample(c *cli.Context) error {
	ctx := c.Context
	if _, err := parseShard(c, "sample"); err != nil {
		return err
	}
	p := sample.DefaultStageParams()
	p.Sampler, p.BatchSize, p.Seed = c.String("sampler"), c.Int("batch"), c.Int64("seed")
	if it := c.Int("iteration"); it < 0 || it > math.MaxInt32 {
		return usageErr("--iteration is %d, want 1..%d (0: one past the newest rolled out)", it, math.MaxInt32)
	} else {
		p.Iteration = int32(it)
	}
	var err error
	var alpha, beta *float64
	if c.IsSet("alpha") {
		alpha = ptr(c.Float64("alpha"))
	}
	if c.IsSet("ema-beta") {
		beta = ptr(c.Float64("ema-beta"))
	}
	// The pool bounds are checked here so that their error names them, and
	// ResolveEMA's remaining errors are about --alpha/--ema-beta.
	if pmin, pmax := c.Float64("p-min"), c.Float64("p-max"); !(pmin >= 0 && pmin <= pmax && pmax <= 1) {
		return usageErr("--p-min/--p-max: pool bounds [%v, %v], want 0 <= p-min <= p-max <= 1", pmin, pmax)
	}
	if p.EMA, err = sample.ResolveEMA(p.Sampler, alpha, beta, c.Float64("p-min"), c.Float64("p-max")); err != nil {
		return usageErr("--alpha/--ema-beta: %v", err)
	}
	p.Frontier.Mu, p.Frontier.Sigma, p.Frontier.Gamma = c.Float64("mu"), c.Float64("sigma"), c.Float64("gamma")
	// Checked as ints before the narrowing to int32, which would wrap
	// 4294967297 to 1.
	replayCap, err := intFlag(c, "replay-cap", 1, math.MaxInt32)
	if err != nil {
		return err
	}
	maxStale, err := intFlag(c, "max-stale", 0, math.MaxInt32)
	if err != nil {
		return err
	}
	p.DTAC.MaxReplays, p.DTAC.ICSRatio, p.DTAC.AdaPRRatio, p.DTAC.MaxStale = int32(replayCap), c.Float64("ics-ratio"), c.Float64("adapr-ratio"), int32(maxStale)
	if err := p.DTAC.Validate(); err != nil {
		return usageErr("%v", err)
	}
	l, tx, err := beginOnSnapshot(c, "sample: the lake has no snapshot; import or synthesize tasks and roll them out first")
	if err != nil {
		return err
	}
	in := tx.Base()
	var input sample.StageInput
	if input.Tasks, err = lake.ReadTable(ctx, l, in, schemas.Tasks); err != nil {
		return err
	}
	if input.History, err = lake.ReadTable(ctx, l, in, schemas.PassRates); err != nil {
		return err
	}
	if input.Batches, err = lake.ReadTable(ctx, l, in, schemas.Batches); err != nil {
		return err
	}
	if input.Buffer, err = lake.ReadTable(ctx, l, in, schemas.ReplayBuffer); err != nil {
		return err
	}
	input.PolicyVersion = -1
	cks, err := lake.ReadTable(ctx, l, in, schemas.Checkpoints)
	if err != nil {
		return err
	}
	for _, ck := range cks {
		input.PolicyVersion = max(input.PolicyVersion, ck.Version)
	}
	err = lake.ScanTable(ctx, l, in, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
		for _, r := range rows {
			switch r.Source {
			case "rollout":
				input.Trajectories = append(input.Trajectories, r)
			case sample.SourceCalibration:
				input.Calibration = append(input.Calibration, r)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	out, err := sample.RunStage(input, p)
	if err != nil {
		return err
	}
	if err := lake.AppendTable(ctx, tx, schemas.PassRates, out.PassRates); err != nil {
		return err
	}
	if err := lake.AppendTable(ctx, tx, schemas.Batches, out.Batch); err != nil {
		return err
	}
	if len(out.Buffer) > 0 {
		if err := lake.AppendTable(ctx, tx, schemas.ReplayBuffer, out.Buffer); err != nil {
			return err
		}
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "sample", Seed: p.Seed, Inputs: []string{in.ID}, Params: p})
	if err != nil {
		return err
	}
	channels := map[string]int{}
	for _, b := range out.Batch {
		channels[b.Channel]++
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"snapshot": m.ID, "iteration": out.Iteration, "observed_iteration": out.Observed,
			"sampler": p.Sampler, "ema_rule": p.EMA.Rule, "ema_alpha": p.EMA.Alpha, "batch": len(out.Batch), "channels": channels, "replay_buffer_rows": len(out.Buffer), "reentered": out.Reentered, "in_pool": out.InPool, "rated": out.Rated, "pass_rate_rows": len(out.PassRates)})
	}
	if out.Observed >= 0 {
		fmt.Fprintf(c.App.Writer, "pass rates: folded iteration %d into %d tasks (%d rated, %d in pool)\n", out.Observed, len(out.PassRates), out.Rated, out.InPool)
	}
	fmt.Fprintf(c.App.Writer, "batch for iteration %d: %d tasks by %s %v\nsnapshot %s\n", out.Iteration, len(out.Batch), p.Sampler, channels, m.ID)
	return nil
}

func ptr[T any](v T) *T { return &v }

func runSimulateSamplers(c *cli.Context) error {
	cfg := samplersim.DefaultConfig()
	cfg.Iterations, cfg.Tasks = c.Int("iterations"), c.Int("tasks")
	cfg.Seeds = nil
	for i := 0; i < c.Int("seeds"); i++ {
		cfg.Seeds = append(cfg.Seeds, uint64(c.Int64("seed"))+uint64(i))
	}
	res, err := samplersim.Run(cfg)
	if err != nil {
		return err
	}
	if chart := c.String("chart"); chart != "" {
		if err := outfile.WriteBytes(chart, res.SVG(), lakeFolders(c)...); err != nil {
			return fmt.Errorf("--chart %w", err)
		}
	}
	snapshot := ""
	if !c.Bool("no-commit") {
		l, err := openLake(c, true)
		if err != nil {
			return err
		}
		tx, err := l.Begin(c.Context, "")
		if err != nil {
			return err
		}
		if err := lake.ReplaceTable(c.Context, tx, schemas.SamplerSims, res.Rows()); err != nil {
			return err
		}
		m, err := tx.Commit(c.Context, lake.CommitInfo{Stage: "simulate-samplers", Seed: c.Int64("seed"), Params: cfg})
		if err != nil {
			return err
		}
		snapshot = m.ID
	}
	if c.Bool("json") {
		b, err := res.JSON()
		if err != nil {
			return err
		}
		_, err = c.App.Writer.Write(append(b, '\n'))
		return err
	}
	fmt.Fprint(c.App.Writer, res.Summary())
	if snapshot != "" {
		fmt.Fprintf(c.App.Writer, "table sampler_sim committed in snapshot %s; chart %s\n", snapshot, c.String("chart"))
	}
	return nil
}
