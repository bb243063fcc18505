package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/infile"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/verify"
	"github.com/cualake/cualake/schemas"
)

// Environment variables configure the verifier that `rollout --reward
// verifier|both` runs, since the rollout command's flags are its own.
const (
	envVerifyStrategy = "CUALAKE_VERIFY_STRATEGY"      // comma list; the first one's reward is `--reward verifier`'s (default builtin)
	envVerifyFile     = "CUALAKE_VERIFY_STRATEGY_FILE" // a learned strategy's JSON (default: the lake's newest)
	envVerifyEndpoint = "CUALAKE_VERIFY_ENDPOINT"      // openai strategy (default $OPENAI_BASE_URL)
	envVerifyModel    = "CUALAKE_VERIFY_MODEL"         // openai strategy
	envVerifyRounds   = "CUALAKE_VERIFY_MAX_ROUNDS"    // Probe rounds K (default 2)
	envVerifySteps    = "CUALAKE_VERIFY_STEPS"         // GUI steps per Probe round (default 15)
	envVerifyWindow   = "CUALAKE_VERIFY_WINDOW"        // last observations the Judge sees (default 3)
)

func init() {
	register(&cli.Command{
		Name:  "verify",
		Usage: "verify trajectories with a Judge and a read-only Probe of their final states (VeriCUA); commits verifications",
		Description: `Verifies every finished trajectory of --in with each --strategy and appends one verifications row
per (trajectory, strategy) not verified yet: criteria with statuses, probe use, steps, tokens and refused
actions, verdict, executable outcome and the VeriCUA schedule reward (+1.0 / +0.7 correct without / with
probing, -0.7 / -0.3 wrong, -1.0 unresolved, which includes any verdict without an executable outcome).
The Probe inspects the live environment restored from each trajectory's final-state blob; actions that
would save, delete or edit are refused and counted, and evidence screenshots become blobs.

  passive   Judge on the last screenshots only (baseline)
  builtin   prompted Judge + Probe: checks every uncertain criterion, never guesses
  trained   the same Judge with the strategy learned by --train (newest in the lake, or --strategy-file)
  openai    Judge and Probe on an OpenAI-compatible endpoint (--endpoint, --model), strict JSON replies

--train learns the builtin Judge's check/guess policy with REINFORCE++ from single attempts on fresh terminal
states of the perturbed-oracle actor (--train-on bench) or on the snapshot's trajectories (--train-on lake),
keeps the iterate with the best validation reward, evaluates passive, builtin and trained on held-out states,
and commits the strategy as a blob (stage verify-train; params.strategy_blob names it).

For rollout --reward verifier|both the verifier is configured by environment: CUALAKE_VERIFY_STRATEGY
(comma list, first = reward; default builtin), CUALAKE_VERIFY_STRATEGY_FILE, CUALAKE_VERIFY_ENDPOINT,
CUALAKE_VERIFY_MODEL, CUALAKE_VERIFY_MAX_ROUNDS, CUALAKE_VERIFY_STEPS, CUALAKE_VERIFY_WINDOW.

Example:
   cualake verify --strategy passive,builtin --json
   cualake verify --train --iterations 12 --batch 64 --seed 1
   cualake verify --strategy trained --in main
   CUALAKE_VERIFY_STRATEGY=builtin,passive cualake rollout --policy random --n 2 --reward both`,
		Flags: []cli.Flag{lakeFlag, jsonFlag,
			&cli.StringFlag{Name: "in", Usage: "input snapshot or tag (default main)"},
			&cli.StringFlag{Name: "strategy", Value: "passive,builtin", Usage: "comma list of passive, builtin, trained, openai"},
			&cli.StringFlag{Name: "strategy-file", Usage: "trained: a learned strategy's JSON instead of the lake's newest"},
			&cli.IntFlag{Name: "limit", Usage: "at most N trajectories, in id order (0: all)"},
			&cli.IntFlag{Name: "window", Value: verify.DefaultWindow, Usage: "last observations the Judge sees"},
			&cli.IntFlag{Name: "max-rounds", Value: verify.DefaultMaxRounds, Usage: "Probe rounds K"},
			&cli.IntFlag{Name: "steps", Value: verify.DefaultStepsPerRound, Usage: "GUI steps per Probe round"},
			&cli.BoolFlag{Name: "tree-only", Usage: "no evidence screenshots (accessibility trees only)"},
			&cli.StringFlag{Name: "endpoint", EnvVars: []string{envVerifyEndpoint, "OPENAI_BASE_URL"}, Usage: "openai: base URL of an OpenAI-compatible server"},
			&cli.StringFlag{Name: "model", EnvVars: []string{envVerifyModel}, Usage: "openai: model name"},
			&cli.IntFlag{Name: "workers", Value: min(runtime.NumCPU(), maxWorkers), Usage: "parallel verifications (output does not depend on it)"},
			&cli.BoolFlag{Name: "train", Usage: "learn the trained strategy instead of verifying"},
			&cli.StringFlag{Name: "train-on", Value: "bench", Usage: "train: bench (fresh perturbed-oracle episodes) or lake (the snapshot's trajectories)"},
			&cli.IntFlag{Name: "iterations", Value: 12, Usage: "train: policy updates"},
			&cli.IntFlag{Name: "batch", Value: 64, Usage: "train: terminal states per update"},
			&cli.Float64Flag{Name: "lr", Value: 0.05, Usage: "train: Adam step size"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "train: seed of episodes, choices and held-out sets"},
			&cli.IntFlag{Name: "validation", Value: 120, Usage: "train: held-out states for picking the best iterate (0: keep the last)"},
			&cli.IntFlag{Name: "eval", Value: 283, Usage: "train: held-out states for the final comparison (0: none)"},
		},
		Action: runVerify,
	})
	newVerifier = rolloutVerifier
}

// runnerOptions are what building the strategies' runners needs.
type runnerOptions struct {
	maxRounds, steps int
	screenshots      bool
	strategyFile     string
	endpoint, model  string
	lake             *lake.Lake
	ref              string
}

// buildRunners resolves strategy names into runners, in order.
func buildRunners(ctx context.Context, names []string, o runnerOptions) ([]*verify.Runner, error) {
	var out []*verify.Runner
	seen := map[string]bool{}
	for _, name := range names {
		name = strings.TrimSpace(name)
		if seen[name] {
			return nil, usageErr("strategy %q named twice", name)
		}
		seen[name] = true
		var s *verify.Strategy
		switch name {
		case verify.StrategyPassive:
			s = verify.Passive()
		case verify.StrategyBuiltin:
			s = verify.Builtin()
		case verify.StrategyTrained:
			var err error
			if s, err = loadTrained(ctx, o); err != nil {
				return nil, err
			}
		case verify.StrategyOpenAI:
			r, err := verify.NewOpenAIRunner(verify.OpenAIConfig{BaseURL: o.endpoint, Model: o.model, APIKey: os.Getenv("OPENAI_API_KEY")},
				o.maxRounds, o.steps, o.screenshots)
			if err != nil {
				return nil, usageErr("%v", err)
			}
			out = append(out, r)
			continue
		default:
			return nil, usageErr("strategy %q: want passive, builtin, trained or openai", name)
		}
		if s.Probe {
			s.MaxRounds, s.StepsPerRound = o.maxRounds, o.steps
		}
		out = append(out, verify.NewRunner(s, nil, o.screenshots))
	}
	if len(out) == 0 {
		return nil, usageErr("no strategy given")
	}
	return out, nil
}

func loadTrained(ctx context.Context, o runnerOptions) (*verify.Strategy, error) {
	if o.strategyFile != "" {
		b, err := infile.Read(o.strategyFile, infile.MaxText)
		if err != nil {
			return nil, fmt.Errorf("trained strategy: %w", err)
		}
		s, err := verify.UnmarshalStrategy(b)
		if err != nil {
			return nil, fmt.Errorf("trained strategy %s: %w", o.strategyFile, err)
		}
		s.Name = verify.StrategyTrained
		return s, nil
	}
	if o.lake == nil {
		return nil, fmt.Errorf("trained strategy: %w (no lake; set %s)", verify.ErrNoTrained, envVerifyFile)
	}
	s, _, err := verify.FindTrained(ctx, o.lake, o.ref)
	return s, err
}

func envInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, usageErr("$%s=%q: want a whole number >= 0", name, v)
	}
	return n, nil
}

// rolloutVerifier is the verifier `rollout --reward verifier|both` runs,
// configured by environment variables.
func rolloutVerifier(c *cli.Context) (rollout.Verifier, error) {
	rounds, err := envInt(envVerifyRounds, verify.DefaultMaxRounds)
	if err != nil {
		return nil, err
	}
	steps, err := envInt(envVerifySteps, verify.DefaultStepsPerRound)
	if err != nil {
		return nil, err
	}
	window, err := envInt(envVerifyWindow, verify.DefaultWindow)
	if err != nil {
		return nil, err
	}
	names := "builtin"
	if v := os.Getenv(envVerifyStrategy); v != "" {
		names = v
	}
	o := runnerOptions{maxRounds: rounds, steps: steps, screenshots: !c.Bool("tree-only"), strategyFile: os.Getenv(envVerifyFile),
		endpoint: os.Getenv(envVerifyEndpoint), model: os.Getenv(envVerifyModel), ref: c.String("in")}
	if o.endpoint == "" {
		o.endpoint = os.Getenv("OPENAI_BASE_URL")
	}
	if strings.Contains(names, verify.StrategyTrained) && o.strategyFile == "" {
		if o.lake, err = openLake(c, false); err != nil {
			return nil, fmt.Errorf("%s names trained: %w", envVerifyStrategy, err)
		}
	}
	runners, err := buildRunners(c.Context, strings.Split(names, ","), o)
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", envVerifyStrategy, err)
	}
	return &verify.Verifier{Runners: runners, Window: window}, nil
}

func runVerify(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("verify takes no arguments, got %q", c.Args().First())
	}
	// Each flag is checked on its own, so the error names the one at fault.
	for _, r := range []struct {
		name   string
		lo, hi int
	}{
		{"max-rounds", 0, math.MaxInt},
		{"steps", 1, math.MaxInt},
		{"window", 1, math.MaxInt},
		{"limit", 0, math.MaxInt}, // 0: all
		{"workers", 1, maxWorkers},
	} {
		if _, err := intFlag(c, r.name, r.lo, r.hi); err != nil {
			return err
		}
	}
	if c.Bool("train") {
		return runVerifyTrain(c)
	}
	ctx := c.Context
	l, tx, err := beginOnSnapshot(c, "verify: the lake has no snapshot (run cualake rollout first)")
	if err != nil {
		return err
	}
	in := tx.Base()
	runners, err := buildRunners(ctx, strings.Split(c.String("strategy"), ","), runnerOptions{
		maxRounds: c.Int("max-rounds"), steps: c.Int("steps"), screenshots: !c.Bool("tree-only"),
		strategyFile: c.String("strategy-file"), endpoint: c.String("endpoint"), model: c.String("model"), lake: l, ref: in.ID})
	if err != nil {
		return err
	}
	openai := strings.Contains(c.String("strategy"), verify.StrategyOpenAI)
	rows, evidence, sum, err := verify.Stage(ctx, l, in, runners, verify.StageParams{Window: c.Int("window"), Limit: c.Int("limit"),
		Images: openai && !c.Bool("tree-only"), Workers: c.Int("workers")})
	if err != nil {
		return err
	}
	known, err := lake.BlobHashes(ctx, l, in)
	if err != nil {
		return err
	}
	var fresh []schemas.Blob
	for _, b := range evidence {
		if !known[b.Hash] {
			fresh = append(fresh, b)
		}
	}
	snapshot := in.ID
	if len(rows) > 0 {
		if err := lake.AppendTable(ctx, tx, schemas.Verifications, rows); err != nil {
			return err
		}
		if len(fresh) > 0 {
			if err := lake.AppendTable(ctx, tx, schemas.Blobs, fresh); err != nil {
				return err
			}
		}
		var names []string
		for _, r := range runners {
			names = append(names, r.Name)
		}
		m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "verify", Inputs: []string{in.ID}, Params: map[string]any{
			"strategies": names, "window": c.Int("window"), "max_rounds": c.Int("max-rounds"), "steps_per_round": c.Int("steps"),
			"limit": c.Int("limit"), "tree_only": c.Bool("tree-only"), "model": c.String("model")}})
		if err != nil {
			return err
		}
		snapshot = m.ID
	}
	metrics := verify.Summarize(rows)
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"snapshot": snapshot, "summary": sum, "new_blobs": len(fresh), "metrics": metrics})
	}
	fmt.Fprintf(c.App.Writer, "verify: %d rows over %d trajectories (%d already verified, %d unfinished, %d without a task)\n",
		sum.Rows, sum.Verified, sum.Existing, sum.Unfinished, sum.NoTask)
	printMetrics(c, metrics)
	fmt.Fprintf(c.App.Writer, "snapshot %s\n", snapshot)
	return nil
}

func printMetrics(c *cli.Context, ms []verify.Metrics) {
	fmt.Fprintf(c.App.Writer, "%-9s %-10s %5s %9s %7s %7s %6s %11s %11s %12s\n", "strategy", "domain", "n", "agreement", "fp", "fn", "unres", "probe_rate", "probe_steps", "probe_tokens")
	for _, m := range ms {
		fmt.Fprintf(c.App.Writer, "%-9s %-10s %5d %9.3f %7.3f %7.3f %6d %11.3f %11.2f %12.1f\n", m.Strategy, m.Domain, m.N, m.Agreement,
			m.FPRate, m.FNRate, m.Unresolved, m.ProbeRate, m.StepsPerJudgment, m.TokensPerJudgment)
	}
}

// benchTasks picks n tasks spread over the pool for a held-out set.
func benchTasks(pool []schemas.Task, n int) []schemas.Task {
	if n <= 0 || n >= len(pool) {
		return pool
	}
	step := float64(len(pool)) / float64(n)
	out := make([]schemas.Task, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, pool[int(float64(i)*step)])
	}
	return out
}

func runVerifyTrain(c *cli.Context) error {
	ctx := c.Context
	if c.Int("iterations") < 1 || c.Int("batch") < 1 || !(c.Float64("lr") > 0) {
		return usageErr("--iterations and --batch must be >= 1 and --lr > 0")
	}
	l, err := openLake(c, true)
	if err != nil {
		return err
	}
	tx, err := l.Begin(ctx, c.String("in"))
	if err != nil {
		return err
	}
	var in *lake.Manifest
	if tx.Parent() != "" {
		in = tx.Base()
	}
	seed, workers := c.Int64("seed"), c.Int("workers")
	pool := simdesk.Pool()
	if in != nil {
		if lt, err := lake.ReadTable(ctx, l, in, schemas.Tasks); err != nil {
			return err
		} else if len(lt) > 0 {
			pool = lt
		}
	}
	var src verify.Source
	switch c.String("train-on") {
	case "bench":
		src = &verify.BenchSource{Tasks: pool, Size: c.Int("batch"), Seed: seed, Workers: workers}
	case "lake":
		if in == nil {
			return fmt.Errorf("verify --train-on lake: the lake has no snapshot")
		}
		inputs, _, err := verify.LoadInputs(ctx, l, in, verify.StageParams{Window: c.Int("window")}, func(t schemas.Trajectory) bool {
			return t.FinalState != "" && verify.Scored(verify.ExecutableOutcome(t))
		})
		if err != nil {
			return err
		}
		if len(inputs) == 0 {
			return fmt.Errorf("verify --train-on lake: no trajectory with a final state and an executable outcome")
		}
		src = &verify.FixedSource{Inputs: inputs, Size: c.Int("batch")}
	default:
		return usageErr("--train-on: want bench or lake")
	}
	// Held-out states come from the perturbed-oracle actor at seeds no
	// training batch uses.
	var val, eval []*verify.Input
	if n := c.Int("validation"); n > 0 {
		if val, err = verify.BenchInputs(ctx, benchTasks(pool, n), seed^0x5a1d, 0, workers, true); err != nil {
			return err
		}
	}
	if n := c.Int("eval"); n > 0 {
		if eval, err = verify.BenchInputs(ctx, benchTasks(pool, n), seed^0xe7a1, 0, workers, true); err != nil {
			return err
		}
	}
	init := verify.Builtin()
	init.MaxRounds, init.StepsPerRound = c.Int("max-rounds"), c.Int("steps")
	start := time.Now()
	trained, rep, err := verify.Train(ctx, init, src, verify.TrainParams{Iterations: c.Int("iterations"), LR: c.Float64("lr"),
		Seed: seed, Workers: workers, Validation: val})
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	var metrics []verify.Metrics
	if len(eval) > 0 {
		passive := verify.Passive()
		rows, err := verify.Evaluate(ctx, eval, []*verify.Strategy{passive, init, trained}, workers)
		if err != nil {
			return err
		}
		metrics = verify.Summarize(rows)
	}
	blob, err := verify.StrategyBlob(trained)
	if err != nil {
		return err
	}
	if err := lake.AppendTable(ctx, tx, schemas.Blobs, []schemas.Blob{blob}); err != nil {
		return err
	}
	var inputs []string
	if in != nil {
		inputs = []string{in.ID}
	}
	overall := map[string]verify.Metrics{}
	for _, m := range metrics {
		if m.Domain == verify.AllDomains {
			overall[m.Strategy] = m
		}
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: verify.TrainStage, Seed: seed, Inputs: inputs, Params: map[string]any{
		"strategy_blob": blob.Hash, "train_on": c.String("train-on"), "iterations": c.Int("iterations"), "batch": c.Int("batch"),
		"lr": c.Float64("lr"), "validation": len(val), "eval": len(eval), "best_iteration": rep.Best, "attempts": rep.Attempts,
		"max_rounds": init.MaxRounds, "steps_per_round": init.StepsPerRound, "evaluation": overall}})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"snapshot": m.ID, "strategy_blob": blob.Hash, "report": rep,
			"metrics": metrics, "strategy": trained})
	}
	fmt.Fprintf(c.App.Writer, "verify --train: %d attempts over %d iterations in %s (best iteration %d, %s)\n",
		rep.Attempts, len(rep.Iterations), elapsed.Round(time.Second), rep.Best, c.String("train-on"))
	for _, it := range rep.Iterations {
		fmt.Fprintf(c.App.Writer, "  iteration %2d: reward %.3f agreement %.3f probe rate %.3f | validation reward %.3f agreement %.3f probe rate %.3f\n",
			it.Iteration, it.MeanReward, it.Agreement, it.ProbeRate, it.ValidationReward, it.ValidationAgreement, it.ValidationProbeRate)
	}
	if len(metrics) > 0 {
		fmt.Fprintf(c.App.Writer, "held-out comparison (%d states):\n", len(eval))
		printMetrics(c, metrics)
	}
	fmt.Fprintf(c.App.Writer, "strategy blob %s\nsnapshot %s\n", blob.Hash, m.ID)
	return nil
}
