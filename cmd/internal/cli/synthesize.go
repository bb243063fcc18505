package cli

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/pipeline/synthesize"
	"github.com/cualake/cualake/schemas"
)

func init() {
	register(&cli.Command{
		Name:  "synthesize",
		Usage: "synthesize verifiable tasks (VeriGen): proposer, rule validator, judger, checker and fixer; split and compose from trajectories",
		Description: `Grows the task pool. From the simulator's knowledge documents (or --docs DIR) a proposer writes
candidate tasks; a rule validator checks each declarative judge statically, a judger reviews
instruction and judge, a checker dry-runs the task in the simulator, and a fixer repairs rejected
candidates for up to --max-rounds rounds. With --from-trajectories, failed tasks of the input
snapshot are split at the sub-goal where rollouts deviated, and succeeded tasks of one app are
composed into conjunctive tasks. --count is the number of accepted tasks to reach (the last wave
may add a few more). Commits the pool (existing tasks plus accepted ones; the built-in pool when
the lake has none) and one synthesis row per candidate and round.

Example:
   cualake synthesize --count 50
   cualake synthesize --without judger --seed 7 --json
   cualake synthesize --from-trajectories --count 20
   cualake synthesize --proposer openai --endpoint http://localhost:8000/v1 --model qwen --checker builtin
   cualake synthesize --count 50 --shard 2/8   (candidates of shard 2 of 8; then cualake lake merge)

Sharded (--shard I/N), every shard builds the same candidate stream (the builtin proposer's
calls, or the trajectory candidates) up to --horizon and takes the candidates whose index
falls in its shard through the loop; the merge replays the loop's decisions (waves, the stop
at --count, duplicates, task ids) over them, so it commits what an unsharded run commits.
Shards evaluate candidates an unsharded run may not reach; a merge that needs one beyond the
horizon says so. The openai proposer cannot be sharded (its replies differ between shards).`,
		Flags: []cli.Flag{lakeFlag, jsonFlag, shardFlag,
			&cli.IntFlag{Name: "horizon", Usage: "sharded runs: candidates of the stream each shard considers (default: the candidate budget, always enough)"},
			&cli.StringFlag{Name: "in", Usage: "input snapshot (default main)"},
			&cli.StringFlag{Name: "backend", Value: "builtin", Usage: "every role's backend: builtin or openai"},
			&cli.StringFlag{Name: "proposer", Usage: "proposer backend (default --backend)"},
			&cli.StringFlag{Name: "judger", Usage: "judger backend (default --backend)"},
			&cli.StringFlag{Name: "checker", Usage: "checker backend (default --backend): builtin plans in the simulator, openai acts as a rollout policy"},
			&cli.StringFlag{Name: "fixer", Usage: "fixer backend (default --backend)"},
			&cli.StringFlag{Name: "docs", Usage: "folder of Markdown knowledge documents (default: the simulator's)"},
			&cli.BoolFlag{Name: "from-trajectories", Usage: "split failed and compose succeeded tasks of the input's trajectories"},
			&cli.IntFlag{Name: "count", Value: 50, Usage: "accepted tasks to reach"},
			&cli.StringSliceFlag{Name: "without", Usage: "remove a role for an ablation: judger, fixer or rule-validator (repeatable)"},
			&cli.IntFlag{Name: "max-rounds", Value: 3, Usage: "fixer rounds per candidate"},
			&cli.IntFlag{Name: "per-call", Value: 3, Usage: "candidates per proposer call"},
			&cli.IntFlag{Name: "max-candidates", Usage: "candidate budget (default 8*count+24)"},
			&cli.Float64Flag{Name: "flaw-rate", Value: 0.35, Usage: "builtin proposer: share of proposals with a planted flaw (0 for none)"},
			&cli.IntFlag{Name: "checker-max-turns", Value: 30, Usage: "openai checker: turn limit of its dry run"},
			&cli.BoolFlag{Name: "checker-tree-only", Usage: "openai checker: accessibility trees instead of screenshots"},
			&cli.IntFlag{Name: "workers", Value: runtime.NumCPU(), Usage: "parallel candidates (output does not depend on it)"},
			&cli.Int64Flag{Name: "seed", Usage: "run seed"},
			&cli.StringFlag{Name: "endpoint", EnvVars: []string{"OPENAI_BASE_URL"}, Usage: "openai roles: base URL of an OpenAI-compatible server"},
			&cli.StringFlag{Name: "model", Usage: "openai roles: model name"},
		},
		Action: runSynthesize,
	})
}

// synthesizeParams reads the flags.
func synthesizeParams(c *cli.Context) (synthesize.Params, error) {
	p := synthesize.DefaultParams()
	p.Backend = c.String("backend")
	p.Proposer, p.Judger, p.Checker, p.Fixer = c.String("proposer"), c.String("judger"), c.String("checker"), c.String("fixer")
	for _, b := range []string{p.Backend, p.Proposer, p.Judger, p.Checker, p.Fixer} {
		if b != "" && b != synthesize.BackendBuiltin && b != synthesize.BackendOpenAI {
			return p, usageErr("backend %q: want builtin or openai", b)
		}
	}
	for _, w := range c.StringSlice("without") {
		for _, r := range strings.Split(w, ",") {
			r = strings.TrimSpace(r)
			if r != synthesize.RoleJudger && r != synthesize.RoleFixer && r != synthesize.RoleRules {
				return p, usageErr("--without %q: want judger, fixer or rule-validator", r)
			}
			p.Without = append(p.Without, r)
		}
	}
	if c.Int("count") < 1 || c.Int("max-rounds") < 0 || c.Int("per-call") < 1 {
		return p, usageErr("--count and --per-call must be >= 1, --max-rounds >= 0")
	}
	p.Count, p.MaxRounds, p.PerCall, p.MaxCandidates = c.Int("count"), c.Int("max-rounds"), c.Int("per-call"), c.Int("max-candidates")
	p.Workers, p.Seed, p.FromTrajectories = c.Int("workers"), c.Int64("seed"), c.Bool("from-trajectories")
	p.FlawRate = c.Float64("flaw-rate")
	if p.FlawRate == 0 {
		p.FlawRate = -1 // explicit 0: no planted flaws
	}
	p.CheckerMaxTurns, p.CheckerTreeOnly = c.Int("checker-max-turns"), c.Bool("checker-tree-only")
	p.LLM = synthesize.LLMConfig{BaseURL: c.String("endpoint"), Model: c.String("model"), APIKey: os.Getenv("OPENAI_API_KEY")}
	return p, nil
}

func init() {
	shardRefusals["synthesize"] = func(flag func(string) string) error {
		p := synthesize.DefaultParams()
		p.Backend, p.Proposer, p.FromTrajectories = flag("backend"), flag("proposer"), flag("from-trajectories") == "true"
		return synthesize.CheckShardable(p)
	}
}

func runSynthesize(c *cli.Context) error {
	ctx := c.Context
	spec, err := parseShard(c, "synthesize")
	if err != nil {
		return err
	}
	p, err := synthesizeParams(c)
	if err != nil {
		return err
	}
	if spec.Sharded() {
		if err := synthesize.CheckShardable(p); err != nil {
			return usageErr("--shard: %v", err)
		}
	} else if c.IsSet("horizon") {
		return usageErr("--horizon applies to sharded runs (--shard I/N)")
	}
	if c.Int("horizon") < 0 {
		return usageErr("--horizon: want N >= 0")
	}
	l, err := openLake(c, true)
	if err != nil {
		return err
	}
	tx, err := l.Begin(ctx, c.String("in"))
	if err != nil {
		return err
	}
	input := synthesize.Input{SnapshotID: tx.Parent()}
	var in *lake.Manifest
	if tx.Parent() != "" {
		in = tx.Base()
		if input.Tasks, err = lake.ReadTable(ctx, l, in, schemas.Tasks); err != nil {
			return err
		}
	}
	if dir := c.String("docs"); dir != "" {
		if input.Docs, err = synthesize.LoadDocs(dir); err != nil {
			return err
		}
	}
	if p.FromTrajectories {
		if in != nil {
			if input.Trajectories, input.Steps, err = readTrajectories(c, l, in); err != nil {
				return err
			}
		}
		if len(input.Trajectories) == 0 {
			return fmt.Errorf("synthesize --from-trajectories: the input snapshot has no trajectories (run rollout first)")
		}
	}
	var inputs []string
	if in != nil {
		inputs = []string{in.ID}
	}
	// Both paths write through shard.Output, so that a merge of fragments
	// writes exactly the files an unsharded run writes.
	out := shard.NewOutput(l, tx, spec)
	defer out.Discard()
	info := func(s synthesize.Summary) lake.CommitInfo {
		params := p.Record()
		params["pool"] = s.PoolFrom
		params["docs"] = s.Docs
		return lake.CommitInfo{Stage: "synthesize", Params: params, Seed: p.Seed, Inputs: inputs}
	}
	if spec.Sharded() {
		ev, err := synthesize.Evaluate(ctx, input, p, synthesize.ShardPlan{Owns: spec.Owns, Horizon: c.Int("horizon")})
		if err != nil {
			return err
		}
		if err := synthesize.AddShardTables(out, ev); err != nil {
			return err
		}
		r, err := out.Finish(ctx, info(ev.Summary))
		if err != nil {
			return err
		}
		return printFragment(c, r.Fragment, map[string]any{"evaluated": ev.Summary.Candidates, "horizon": ev.State.Horizon})
	}
	res, err := synthesize.Run(ctx, input, p)
	if err != nil {
		return err
	}
	if err := synthesize.AddTables(out, res); err != nil {
		return err
	}
	r, err := out.Finish(ctx, info(res.Summary))
	if err != nil {
		return err
	}
	m := r.Manifest
	ids := make([]string, len(res.Accepted))
	for i, t := range res.Accepted {
		ids[i] = t.TaskID
	}
	s := res.Summary
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"snapshot": m.ID, "accepted": ids, "summary": s})
	}
	fmt.Fprintf(c.App.Writer, "synthesize %s (%s): %d candidates, %d rounds, %d accepted %v\n", s.Config, s.Mode, s.Candidates, s.Rows, s.Accepted, s.ByMethod)
	fmt.Fprintf(c.App.Writer, "executable rate %.1f%% of candidate rounds, %.1f%% of final candidates, %.1f%% of accepted tasks\n",
		100*s.ExecutableRate, 100*s.FinalExecutableRate, 100*s.AcceptedExecutableRate)
	fmt.Fprintf(c.App.Writer, "acceptance rate %.1f%%; dropped %v\n", 100*s.AcceptanceRate, s.Dropped)
	fmt.Fprintf(c.App.Writer, "cost per accepted task: %.2f calls, %.0f tokens (total %d calls, %d tokens); latency %.3fs per accepted task (%.1fs in all)\n",
		s.CallsPerAccepted, s.TokensPerAccepted, s.Calls, s.Tokens, s.SecondsPerAccepted, s.Seconds)
	if len(ids) > 0 {
		shown := ids
		if len(shown) > 12 {
			shown = append(shown[:12:12], fmt.Sprintf("... (%d more)", len(ids)-12))
		}
		fmt.Fprintf(c.App.Writer, "new tasks: %s\n", strings.Join(shown, " "))
	}
	for _, n := range s.Notes {
		fmt.Fprintf(c.App.ErrWriter, "note: %s\n", n)
	}
	fmt.Fprintf(c.App.Writer, "snapshot %s\n", m.ID)
	return nil
}

// readTrajectories reads the trajectories of a snapshot and the steps of
// those that failed (the split needs their actions).
func readTrajectories(c *cli.Context, l *lake.Lake, m *lake.Manifest) ([]schemas.Trajectory, []schemas.Step, error) {
	ctx := c.Context
	trajs, err := lake.ReadTable(ctx, l, m, schemas.Trajectories)
	if err != nil {
		return nil, nil, err
	}
	need := map[string]bool{}
	for _, t := range trajs {
		if t.Outcome == schemas.OutcomeFailure || t.Outcome == schemas.OutcomeIncomplete {
			need[t.TrajectoryID] = true
		}
	}
	var steps []schemas.Step
	err = lake.ScanTable(ctx, l, m, schemas.Steps, 4096, func(rows []schemas.Step) error {
		for _, r := range rows {
			if need[r.TrajectoryID] {
				r.ResponseIDs, r.Logprobs = nil, nil // not needed to replay
				steps = append(steps, r)
			}
		}
		return nil
	})
	return trajs, steps, err
}
