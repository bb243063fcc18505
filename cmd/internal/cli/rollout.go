package cli

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/progress"
	"github.com/cualake/cualake/pipeline/rollout"
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
   cualake rollout --policy checkpoint --tasks files-rename-003,sheet-sum-010`,
		Flags: []cli.Flag{lakeFlag, jsonFlag,
			&cli.StringFlag{Name: "in", Usage: "input snapshot (default main)"},
			&cli.StringFlag{Name: "policy", Value: "oracle", Usage: "random, oracle, openai or checkpoint[:VERSION]"},
			&cli.IntFlag{Name: "n", Value: 8, Usage: "rollouts per task (a group)"},
			&cli.StringFlag{Name: "tasks", Usage: "comma-separated task ids (default: the batch or the pool)"},
			&cli.IntFlag{Name: "limit-tasks", Usage: "at most N tasks"},
			&cli.IntFlag{Name: "workers", Value: runtime.NumCPU(), Usage: "parallel episodes (output does not depend on it)"},
			&cli.IntFlag{Name: "max-turns", Value: 50, Usage: "turn limit; hitting it gives the incomplete penalty -0.2"},
			&cli.Int64Flag{Name: "seed", Usage: "run seed; episode seeds derive from it and (task, index)"},
			&cli.StringFlag{Name: "reward", Value: "judge", Usage: "judge, verifier or both"},
			&cli.BoolFlag{Name: "tree-only", Usage: "skip screenshots (faster)"},
			&cli.StringFlag{Name: "source", Value: "rollout", Usage: "rollout (training), eval (held-out evaluation, never trained on) or warmstart (demonstrations)"},
			&cli.StringFlag{Name: "split", Usage: "only tasks of this split (train or heldout)"},
			&cli.IntFlag{Name: "iteration", Value: -1, Usage: "record episodes under this iteration (default: the batch's, or the next)"},
			&cli.StringFlag{Name: "endpoint", EnvVars: []string{"OPENAI_BASE_URL"}, Usage: "openai policy: base URL of an OpenAI-compatible server"},
			&cli.StringFlag{Name: "model", Usage: "openai policy: model name"},
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

func runRollout(c *cli.Context) error {
	ctx := c.Context
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
	case "judge":
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
	if split := c.String("split"); split != "" {
		plan.Tasks = rollout.FilterSplit(plan.Tasks, split)
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
	if plan.PoolFrom == "builtin" {
		// The lake records the pool its trajectories came from.
		pool, err := rollout.PlanRun(ctx, l, nil)
		if err != nil {
			return err
		}
		if err := lake.ReplaceTable(ctx, tx, schemas.Tasks, pool.Tasks); err != nil {
			return err
		}
	}
	known := map[string]bool{}
	if in != nil {
		if known, err = lake.BlobHashes(ctx, l, in); err != nil {
			return err
		}
	}
	trajs := lake.NewAppender(ctx, tx, schemas.Trajectories, 1<<16)
	verifs := lake.NewAppender(ctx, tx, schemas.Verifications, 1<<16)
	steps := lake.NewAppender(ctx, tx, schemas.Steps, 1<<16)
	blobs := lake.NewAppender(ctx, tx, schemas.Blobs, 512)
	sum := rollout.Summary{Tasks: len(tasks)}
	bar := progress.New(os.Stderr, "rollout "+f.Name(), len(tasks)*p.N, c.Bool("json"))
	err = rollout.Run(ctx, tasks, f, rollout.SimEnvs(p), p, func(ep rollout.Episode) error {
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
	for _, a := range []interface{ Close() error }{trajs, steps, blobs, verifs} {
		if err := a.Close(); err != nil {
			return err
		}
	}
	var inputs []string
	if in != nil {
		inputs = []string{in.ID}
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "rollout", Seed: p.Seed, Inputs: inputs,
		Params: p.MarshalParams(f.Name(), map[string]any{"policy_version": f.Version(), "tasks": len(tasks), "from_batch": plan.FromBatch, "pool": plan.PoolFrom, "reward": reward})})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"snapshot": m.ID, "iteration": p.Iteration, "policy": f.Name(),
			"policy_version": f.Version(), "summary": sum})
	}
	fmt.Fprintf(c.App.Writer, "rollout %s (iteration %d): %d trajectories over %d tasks, success %.1f%%, mean reward %.3f, outcomes %v\nsnapshot %s\n",
		f.Name(), p.Iteration, sum.Trajectories, sum.Tasks, 100*sum.SuccessRate, sum.MeanReward, sum.Outcomes, m.ID)
	if len(sum.Errors) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "episodes that ended in error (first %d):\n  %s\n", len(sum.Errors), strings.Join(sum.Errors, "\n  "))
	}
	return nil
}
