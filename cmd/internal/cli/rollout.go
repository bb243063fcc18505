package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/pipeline/progress"
	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/sample"
	"github.com/cualake/cualake/pipeline/segment"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/schemas"
)

func init() {
	register(&cli.Command{
		Name:  "rollout",
		Usage: "roll out a policy on the batch (or the pool): n episodes per task, judged, committed",
		Description: `Reads the input snapshot's newest unrolled batch (from sample), else its tasks, else the
simulator's built-in pool; commits trajectories, steps and blobs (screenshots stored once).

Example:
   cualake rollout --policy oracle --n 1
   cualake rollout --policy random --n 8 --limit-tasks 20 --workers 2 --json
   cualake rollout --policy checkpoint --tasks files-rename-003,sheet-sum-010
   cualake rollout --policy oracle --n 4 --shard 2/8   (tasks of shard 2 of 8; then cualake lake merge)
   cualake rollout --policy oracle --source warmstart --split train --n 1 --coverage 0.25 --seed 2
      (demonstrations of a quarter of each family's training tasks)
   cualake rollout --policy oracle --source warmstart --split train --n 1 --coverage 0.25 --cover-by template --seed 2
      (the same quarter, taking one task of each oracle template before a second of any)
   cualake rollout --policy checkpoint --split train --n 8 --unsolved --iteration 2
      (an RFT pass: only the training tasks the policy has not solved yet)
   cualake rollout --policy openai --env osworld --osworld-url http://192.168.1.5:5000 --n 1

Before any episode every task is checked against the environment (cualake simdesk coverage): tasks it
cannot run (imported OSWorld tasks that download files, drive Chrome, or need judge functions cualake
lacks) fail the run, each named with what blocks it, unless --skip-unsupported leaves them out.
An episode the policy or environment fails is committed with outcome error; a run in which every
episode ended in error (an endpoint down) fails naming the first errors and commits nothing. A shard
cannot see this (it sees only its tasks): lake merge checks all shards' episodes and refuses.`,
		Flags: []cli.Flag{lakeFlag, jsonFlag, shardFlag,
			&cli.StringFlag{Name: "in", Usage: "input snapshot (default main)"},
			&cli.StringFlag{Name: "policy", Value: "oracle", Usage: "random, oracle, openai or checkpoint[:VERSION]"},
			&cli.IntFlag{Name: "n", Value: 8, Usage: "rollouts per task (a group)"},
			&cli.StringFlag{Name: "tasks", Usage: "comma-separated task ids (default: the batch or the pool)"},
			&cli.IntFlag{Name: "limit-tasks", Usage: "at most N tasks"},
			&cli.IntFlag{Name: "workers", Value: min(runtime.NumCPU(), maxWorkers), Usage: "parallel episodes (output does not depend on it)"},
			&cli.IntFlag{Name: "max-turns", Value: 50, Usage: "turn limit; hitting it gives the incomplete penalty -0.2"},
			&cli.Int64Flag{Name: "seed", Usage: "run seed; episode seeds derive from it and (task, index)"},
			&cli.StringFlag{Name: "reward", Value: loop.DefaultReward, Usage: "judge, verifier or both"},
			&cli.BoolFlag{Name: "tree-only", Usage: "skip screenshots (faster)"},
			&cli.StringFlag{Name: "source", Value: "rollout", Usage: "rollout (training), eval (held-out evaluation, never trained on) or warmstart (demonstrations)"},
			&cli.StringFlag{Name: "split", Usage: "only tasks of this split (train or heldout)"},
			&cli.Float64Flag{Name: "coverage", Value: 1, Usage: "roll out ceil(F x n) of each task family's n tasks, picked by --seed (VeriGen's tasks: of each app's); 1: all. For demonstrations that cover every family but not every instance"},
			&cli.StringFlag{Name: "cover-by", Value: "family", Usage: "--coverage: family (the seed's first ceil(F x n) of each family) or template (of each family, one task of each oracle template, the oracle's actions in the policy's action language, before a second of any)"},
			&cli.IntFlag{Name: "iteration", Value: -1, Usage: "record episodes under this iteration (default: the batch's, or the next)"},
			&cli.StringFlag{Name: "endpoint", EnvVars: []string{"OPENAI_BASE_URL"}, Usage: "openai policy: base URL of an OpenAI-compatible server"},
			&cli.StringFlag{Name: "model", Usage: "openai policy: model name"},
			&cli.BoolFlag{Name: "greedy", Usage: "checkpoint policy: decode greedily instead of sampling at temperature 0.8"},
			&cli.IntFlag{Name: "redraws", Value: loop.DefaultRedraws, Usage: "checkpoint policy: draw up to N more responses in a turn whose response is no action on the screen (greedy: the most probable one-token deviation, continued greedily; 0: execute it as written)"},
			&cli.StringFlag{Name: "context", Value: string(segment.ModeWindow), Usage: "causal checkpoint: the context it reads, as segment builds it: window, step or trajectory"},
			&cli.IntFlag{Name: "k", Value: segment.DefaultK, Usage: "causal checkpoint, window context: screenshots kept after pruning"},
			&cli.IntFlag{Name: "delta", Value: segment.DefaultDelta, Usage: "causal checkpoint, window context: screenshots dropped per pruning"},
			&cli.IntFlag{Name: "window", Value: segment.DefaultWindow, Usage: "causal checkpoint, step context: previous turns kept in full"},
			&cli.StringFlag{Name: "env", Value: rollout.EnvSim, Usage: "sim (the embedded simulator) or osworld (an OSWorld desktop server: a VM, or cualake simdesk serve; one episode at a time)"},
			&cli.StringFlag{Name: "osworld-url", Usage: "--env osworld: the desktop server's URL, e.g. http://192.168.1.5:5000"},
			&cli.IntFlag{Name: "dapo-refill", Usage: "DAPO dynamic sampling: when the newest rolled-out iteration has fewer than N groups whose rewards differ, draw more tasks (batches rows, channel dapo) and roll them out into that iteration; nothing to do when it has N"},
			&cli.BoolFlag{Name: "unsolved", Usage: "only the tasks with no verified success of the checkpoint policy in the input snapshot (the passes of rejection-sampling fine-tuning: a solved task keeps the successes it has); with --split train, before --coverage"},
			&cli.BoolFlag{Name: "recalibrate", Usage: "roll out the tasks the pass rates hold out of the pool (source calibration, the newest rolled-out iteration): the next sample lets those inside [p_min, p_max] back in"},
			&cli.BoolFlag{Name: "skip-unsupported", Usage: "leave out (and list on stderr) the tasks the environment cannot run, instead of failing before any episode"},
		},
		Action: runRollout,
	})
}

// agentFactory resolves --policy.
func agentFactory(c *cli.Context, l *lake.Lake, m *lake.Manifest) (rollout.AgentFactory, error) {
	name := c.String("policy")
	switch {
	case name == "oracle":
		return rollout.Oracle{}, nil
	case name == "random":
		return rollout.Random{}, nil
	case name == "openai":
		return rollout.NewOpenAI(rollout.OpenAIConfig{BaseURL: c.String("endpoint"), Model: c.String("model"), APIKey: os.Getenv("OPENAI_API_KEY")})
	case name == "checkpoint" || strings.HasPrefix(name, "checkpoint:"):
		return checkpointPolicy(c, l, m, strings.TrimPrefix(strings.TrimPrefix(name, "checkpoint"), ":"))
	}
	return nil, usageErr("--policy %q: want random, oracle, openai or checkpoint[:VERSION]", name)
}

// newVerifier is installed by the verifier's command file; nil until then.
var newVerifier func(c *cli.Context) (rollout.Verifier, error)

// checkpointPolicy is replaced once the trainer can serve rollouts.
var checkpointPolicy = func(c *cli.Context, l *lake.Lake, m *lake.Manifest, version string) (rollout.AgentFactory, error) {
	return nil, fmt.Errorf("--policy checkpoint: %w", ErrNotBuilt)
}

// checkRolloutFlags refuses out-of-range numbers before anything runs. The
// checkpoint policy's context flags are checked whatever the policy, so a
// typo is not ignored until the day the policy changes.
func checkRolloutFlags(c *cli.Context) error {
	for _, r := range []struct {
		name   string
		lo, hi int
	}{
		{"limit-tasks", 0, math.MaxInt}, // 0: all tasks
		{"workers", 1, maxWorkers},
		{"iteration", -1, math.MaxInt32}, // -1: the batch's; recorded as int32
		{"redraws", 0, math.MaxInt},
		{"k", 1, segment.MaxK},
		{"delta", 1, segment.MaxK},
		{"window", 0, segment.MaxK},
	} {
		if _, err := intFlag(c, r.name, r.lo, r.hi); err != nil {
			return err
		}
	}
	if f := c.Float64("coverage"); !(f > 0 && f <= 1) { // NaN fails too
		return usageErr("--coverage is %v, want a fraction in (0, 1] (1: every task)", f)
	}
	if by := c.String("cover-by"); by != "family" && by != "template" {
		return usageErr("--cover-by %q: want family or template", by)
	}
	if c.String("cover-by") == "template" && c.Float64("coverage") == 1 {
		return usageErr("--cover-by template: it orders the pick of --coverage, which is 1 (every task); set --coverage below 1")
	}
	if m := segment.Mode(c.String("context")); !slices.Contains(segment.Modes, m) {
		return usageErr("--context %q: want window, step or trajectory", m)
	}
	return nil
}

func runRollout(c *cli.Context) error {
	ctx := c.Context
	if err := checkRolloutFlags(c); err != nil {
		return err
	}
	spec, err := parseShard(c, "rollout")
	if err != nil {
		return err
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
	reward := c.String("reward")
	var verifier rollout.Verifier
	switch reward {
	case loop.DefaultReward:
	case "verifier", "both":
		if newVerifier == nil {
			return fmt.Errorf("--reward %s: the verifier: %w", reward, ErrNotBuilt)
		}
		if verifier, err = newVerifier(c); err != nil {
			return err
		}
	default:
		return usageErr("--reward: want judge, verifier or both")
	}
	plan, err := rollout.PlanRun(ctx, l, in)
	if err != nil {
		return err
	}
	var ids []string
	if s := c.String("tasks"); s != "" {
		ids = strings.Split(s, ",")
	}
	var refill *sample.Refill
	if n := c.Int("dapo-refill"); n > 0 {
		if plan.FromBatch || in == nil || plan.Iteration == 0 {
			return fmt.Errorf("rollout --dapo-refill: run it after the iteration's batch is rolled out")
		}
		plan.Iteration--
		if refill, err = dapoRefill(ctx, l, in, plan.Iteration, n, c.Int64("seed")); err != nil {
			return err
		}
		if len(refill.Rows) == 0 {
			return nothingToDo(c, in, "rollout --dapo-refill: iteration %d has %d informative groups of %d (want %d); nothing to do",
				plan.Iteration, refill.Informative, refill.Groups, n)
		}
		for _, r := range refill.Rows {
			ids = append(ids, r.TaskID)
		}
	}
	if c.Bool("recalibrate") {
		if plan.FromBatch {
			return fmt.Errorf("rollout --recalibrate: iteration %d's batch is not rolled out yet: recalibrate after its rollout", plan.Iteration)
		}
		if in == nil || plan.Iteration == 0 {
			return fmt.Errorf("rollout --recalibrate: no rolled-out iteration yet (run the initial pass first)")
		}
		if ids, err = recalibrationTasks(ctx, l, in); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nothingToDo(c, in, "rollout --recalibrate: every rated feasible task is in the pool; nothing to do")
		}
		plan.Iteration--
	}
	if split := c.String("split"); split != "" {
		plan.Tasks = rollout.FilterSplit(plan.Tasks, split)
	}
	if c.Bool("recalibrate") {
		// Only the split's tasks are recalibrated (pass rates of older lakes
		// may rate evaluation tasks, which must never re-enter the pool).
		have := map[string]bool{}
		for i := range plan.Tasks {
			have[plan.Tasks[i].TaskID] = true
		}
		ids = slices.DeleteFunc(ids, func(id string) bool { return !have[id] })
		if len(ids) == 0 {
			return nothingToDo(c, in, "rollout --recalibrate: no task of the split is out of the pool; nothing to do")
		}
	}
	unsolved := c.Bool("unsolved")
	if unsolved {
		if ids != nil || plan.FromBatch {
			return usageErr("--unsolved: it picks from the pool, not from --tasks, a batch, --recalibrate or --dapo-refill (run it without them)")
		}
		pool := len(plan.Tasks)
		if plan.Tasks, err = rollout.Unsolved(ctx, l, in, plan.Tasks); err != nil {
			return err
		}
		if len(plan.Tasks) == 0 {
			return nothingToDo(c, in, "rollout --unsolved: each of the %d tasks has a verified success of the policy; nothing to do", pool)
		}
		fmt.Fprintf(c.App.ErrWriter, "rollout --unsolved: %d of the %d tasks have no verified success yet\n", len(plan.Tasks), pool)
	}
	coverage := c.Float64("coverage")
	if coverage != 1 {
		if ids != nil || plan.FromBatch {
			return usageErr("--coverage: it picks from the pool, not from --tasks or a batch (run it before sample, or without --tasks)")
		}
		var tm rollout.Templates
		if c.String("cover-by") == "template" {
			if tm, err = rollout.OracleTemplates(plan.Tasks); err != nil {
				return err
			}
			if len(tm.Missing) > 0 {
				fmt.Fprintf(c.App.ErrWriter, "rollout --cover-by template: %d tasks have no oracle template and count as their own: %s\n", len(tm.Missing), tm.MissingSummary())
			}
		}
		pool := len(plan.Tasks)
		if plan.Tasks, err = rollout.Cover(plan.Tasks, coverage, c.Int64("seed"), tm.ByTask); err != nil {
			return err
		}
		if tm.ByTask != nil {
			fmt.Fprintf(c.App.ErrWriter, "rollout --cover-by template: %d of %d tasks cover %d of their %d oracle templates\n",
				len(plan.Tasks), pool, tm.Of(plan.Tasks).Count(), tm.Count())
		}
	}
	tasks, err := rollout.SelectTasks(plan.Tasks, ids, c.Int("limit-tasks"))
	if ids != nil && err != nil && plan.FromBatch {
		// --tasks may name any pool task, not only the batch's.
		full, perr := rollout.PlanRun(ctx, l, nil)
		if perr == nil {
			tasks, err = rollout.SelectTasks(full.Tasks, ids, c.Int("limit-tasks"))
		}
	}
	if err != nil {
		return err
	}
	// Shards split the selected tasks by task id; the parameters keep the
	// whole run's count, so every shard records the unsharded run's.
	selected := len(tasks)
	tasks = shard.Filter(spec, tasks, func(t *schemas.Task) string { return t.TaskID })
	envName := c.String("env")
	switch envName {
	case rollout.EnvSim:
	case rollout.EnvOSWorld:
		if c.String("osworld-url") == "" {
			return usageErr("--env osworld needs --osworld-url URL")
		}
	default:
		return usageErr("--env: want sim or osworld")
	}
	if blocked := rollout.Unrunnable(tasks, envName); len(blocked) > 0 {
		if !c.Bool("skip-unsupported") {
			return rollout.UnrunnableError(blocked, len(tasks), envName)
		}
		skip := map[string]bool{}
		for _, b := range blocked {
			skip[b.TaskID] = true
		}
		kept := tasks[:0:0]
		for _, t := range tasks {
			if !skip[t.TaskID] {
				kept = append(kept, t)
			}
		}
		fmt.Fprintf(c.App.ErrWriter, "%s\n(--skip-unsupported: rolling out the other %d)\n", rollout.UnrunnableError(blocked, len(tasks), envName), len(kept))
		if tasks = kept; len(tasks) == 0 {
			return fmt.Errorf("rollout: no task left that %s can run", envName)
		}
	}
	f, err := agentFactory(c, l, in)
	if err != nil {
		return err
	}
	p := rollout.DefaultParams()
	p.N, p.MaxTurns, p.Workers, p.Seed, p.Iteration, p.TreeOnly = c.Int("n"), c.Int("max-turns"), c.Int("workers"), c.Int64("seed"), plan.Iteration, c.Bool("tree-only")
	switch p.Source = c.String("source"); p.Source {
	case "rollout", "eval", "warmstart":
	default:
		return usageErr("--source: want rollout, eval or warmstart")
	}
	if it := c.Int("iteration"); it >= 0 {
		p.Iteration = int32(it)
	}
	if c.Bool("recalibrate") {
		p.Source = sample.SourceCalibration
	}
	if err := rollout.CheckNew(ctx, l, in, tasks, p); err != nil {
		return err
	}
	// Every table goes through shard.Output, sharded or not, so that a merge
	// of fragments writes exactly the files an unsharded run writes.
	out := shard.NewOutput(l, tx, spec)
	defer out.Discard()
	if plan.PoolFrom == "builtin" {
		// The lake records the pool its trajectories came from (in every
		// shard: the merge checks they agree and keeps one copy).
		pool, err := rollout.PlanRun(ctx, l, nil)
		if err != nil {
			return err
		}
		if err := shard.NewTable(out, schemas.Tasks, shard.TableOptions{Chunk: lake.MaxFileRows, Replace: true, Shared: true}).Add(pool.Tasks...); err != nil {
			return err
		}
	}
	known := map[string]bool{}
	if in != nil {
		if known, err = lake.BlobHashes(ctx, l, in); err != nil {
			return err
		}
	}
	if refill != nil {
		if err := shard.NewTable(out, schemas.Batches, shard.TableOptions{Chunk: lake.MaxFileRows, Shared: true}).Add(refill.Rows...); err != nil {
			return err
		}
	}
	trajs := shard.NewTable(out, schemas.Trajectories, shard.TableOptions{Chunk: 1 << 16})
	verifs := shard.NewTable(out, schemas.Verifications, shard.TableOptions{Chunk: 1 << 16})
	steps := shard.NewTable(out, schemas.Steps, shard.TableOptions{Chunk: 1 << 16})
	// Screenshots repeat across shards; equal hashes are equal blobs.
	blobs := shard.NewTable(out, schemas.Blobs, shard.TableOptions{Chunk: 512, Dedup: true})
	sum := rollout.Summary{Tasks: len(tasks)}
	bar := progress.New(os.Stderr, "rollout "+f.Name(), len(tasks)*p.N, c.Bool("json"))
	envs := rollout.SimEnvs(p)
	if envName == rollout.EnvOSWorld {
		envs, p.Workers = rollout.OSWorldEnvs(ctx, c.String("osworld-url"), p), 1
	}
	err = rollout.Run(ctx, tasks, f, envs, p, func(ep rollout.Episode) error {
		bar.Add(1)
		if verifier != nil {
			if err := rollout.ApplyVerifier(ctx, verifier, reward, &ep); err != nil {
				return err
			}
			if err := verifs.Add(ep.Verifications...); err != nil {
				return err
			}
		}
		sum.Add(ep)
		if err := trajs.Add(ep.Trajectory); err != nil {
			return err
		}
		if err := steps.Add(ep.Steps...); err != nil {
			return err
		}
		for _, b := range ep.Blobs {
			if !known[b.Hash] {
				known[b.Hash] = true
				sum.NewBlobs++
				if err := blobs.Add(b); err != nil {
					return err
				}
			}
		}
		return nil
	})
	bar.Done()
	if err != nil {
		return err
	}
	if !spec.Sharded() {
		// A down endpoint or a broken environment, not data: committing
		// would feed the sampler a batch of uncounted episodes and exit 0.
		// A shard sees only its own tasks, so it always writes its
		// fragment (a sharded and an unsharded run must commit the same
		// snapshot); the merge checks all shards' episodes at once
		// (rollout.CheckMerge).
		if err := sum.AllErrored(); err != nil {
			return err
		}
	}
	var inputs []string
	if in != nil {
		inputs = []string{in.ID}
	}
	out.Summary = sum
	extra := map[string]any{"policy_version": f.Version(), "tasks": selected, "from_batch": plan.FromBatch, "pool": plan.PoolFrom, "reward": reward}
	if coverage != 1 {
		// only when set, so that runs without it keep their params
		extra["coverage"] = coverage
		if by := c.String("cover-by"); by != "family" {
			extra["cover_by"] = by
		}
	}
	if unsolved {
		extra["unsolved"] = true // tasks: how many had no verified success
	}
	if refill != nil {
		// the extra rollouts DAPO spends on this iteration
		extra["dapo_refill"] = map[string]any{"informative_before": refill.Informative, "groups_before": refill.Groups,
			"tasks": len(refill.Rows), "extra_rollouts": len(tasks) * p.N}
	}
	if len(plan.Replayed) > 0 {
		extra["adapr_replayed"] = plan.Replayed // trained from their buffered groups, not rolled out
	}
	if cf, ok := f.(interface{ Context() segment.Params }); ok {
		// what `segment` must be run with to rebuild the contexts exactly
		cp := cf.Context()
		extra["context"] = map[string]any{"mode": cp.Mode, "k": cp.K, "delta": cp.Delta, "window": cp.Window, "view": cp.View,
			"image_tokens": cp.Image.FixedTokens}
	}
	if rf, ok := f.(interface{ Redraws() int }); ok {
		extra["redraws"] = rf.Redraws()
	}
	res, err := out.Finish(ctx, lake.CommitInfo{Stage: "rollout", Seed: p.Seed, Inputs: inputs, Params: p.MarshalParams(f.Name(), extra)})
	if err != nil {
		return err
	}
	if res.Fragment != nil {
		return printFragment(c, res.Fragment, map[string]any{"iteration": p.Iteration, "policy": f.Name(), "summary": sum})
	}
	m := res.Manifest
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"committed": true, "snapshot": m.ID, "iteration": p.Iteration, "policy": f.Name(),
			"policy_version": f.Version(), "summary": sum})
	}
	fmt.Fprintf(c.App.Writer, "rollout %s (iteration %d): %d trajectories over %d tasks, success %.1f%%, mean reward %.3f, outcomes %v\n",
		f.Name(), p.Iteration, sum.Trajectories, sum.Tasks, 100*sum.SuccessRate, sum.MeanReward, sum.Outcomes)
	fmt.Fprintf(c.App.Writer, "%d steps, %d executed as no action, %d turns redrawn\nsnapshot %s\n", sum.Steps, sum.Unparsed, sum.Redrawn, m.ID)
	if len(sum.Errors) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "episodes that ended in error (first %d):\n  %s\n", len(sum.Errors), strings.Join(sum.Errors, "\n  "))
	}
	return nil
}

// nothingToDo reports a run that commits nothing (the branch stays at in):
// the message as a line, or with --json an object a script can branch on,
// {"committed": false, "snapshot": in's id, "reason": the message}.
func nothingToDo(c *cli.Context, in *lake.Manifest, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if !c.Bool("json") {
		_, err := fmt.Fprintln(c.App.Writer, msg)
		return err
	}
	head := ""
	if in != nil {
		head = in.ID
	}
	return printJSON(c.App.Writer, map[string]any{"committed": false, "snapshot": head, "reason": msg})
}

// recalibrationTasks lists the rated feasible tasks the snapshot's pass
// rates hold out of the pool.
func recalibrationTasks(ctx context.Context, l *lake.Lake, m *lake.Manifest) ([]string, error) {
	history, err := lake.ReadTable(ctx, l, m, schemas.PassRates)
	if err != nil {
		return nil, err
	}
	if len(history) == 0 {
		return nil, fmt.Errorf("rollout --recalibrate: snapshot %s has no pass rates (run sample first)", m.ID)
	}
	state, err := sample.Latest(history, nil)
	if err != nil {
		return nil, err
	}
	return sample.OutOfPool(state), nil
}

// dapoRefill reads what DAPO's refill round needs from the snapshot: the
// iteration's rollouts and batch, and the pass-rate state.
func dapoRefill(ctx context.Context, l *lake.Lake, m *lake.Manifest, iteration int32, target int, seed int64) (*sample.Refill, error) {
	tasks, err := lake.ReadTable(ctx, l, m, schemas.Tasks)
	if err != nil {
		return nil, err
	}
	history, err := lake.ReadTable(ctx, l, m, schemas.PassRates)
	if err != nil {
		return nil, err
	}
	state, err := sample.Latest(history, tasks)
	if err != nil {
		return nil, err
	}
	all, err := lake.ReadTable(ctx, l, m, schemas.Batches)
	if err != nil {
		return nil, err
	}
	var batch []schemas.Batch
	for _, b := range all {
		if b.Iteration == iteration {
			batch = append(batch, b)
		}
	}
	var trajs []schemas.Trajectory
	err = lake.ScanTable(ctx, l, m, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
		for _, r := range rows {
			if r.Source == "rollout" && r.Iteration == iteration {
				trajs = append(trajs, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sample.DAPORefill(state, trajs, batch, iteration, target, uint64(seed))
}
