package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/query"
)

func init() {
	register(&cli.Command{
		Name:  "run",
		Usage: "run the whole RL loop: pool, warm start, initial pass, iterations of sample/rollout/segment/train, evaluation, audits, report",
		Description: `Every step is a stage command committing one snapshot; progress is tagged in the lake (run/<id>/<step>; on --branch B, B/run/<id>/<step>),
so running the same command again after a kill continues where it stopped. The config file names every stage's
parameters (see examples/pipeline.yaml); without one the defaults apply: the papers' GRPO loop. make demo runs
examples/demo.yaml (RFT rounds from a quarter-coverage warm start; that file says why).

Example:
   cualake run
   cualake run --config examples/demo.yaml --json
   cualake run --config examples/pipeline.yaml --seed 7 --json
   cualake run --sampler dtac --lake ./data/lake-dtac
   cualake run --async --json

With --async (config async: true) iteration t's train and iteration t+1's rollout run at once: the rollout acts with
the newest checkpoint there is when it starts (one version behind the train it overlaps), the trainer keeps groups
within train.max_stale versions of the policy it trains, and train_groups records each group's policy lag (the
summary's policy_lag and stale_groups). Reruns after a kill continue without redoing or duplicating a commit.
docs/async.md says what is and is not byte-identical.`,
		Flags: []cli.Flag{lakeFlag, jsonFlag,
			&cli.StringFlag{Name: "config", Usage: "YAML config (defaults: the demo)"},
			&cli.Int64Flag{Name: "seed", Usage: "override the config's seed"},
			&cli.StringFlag{Name: "sampler", Usage: "override the config's sampler (uniform, frontier, dtac, curriculum, dapo)"},
			&cli.IntFlag{Name: "iterations", Value: -1, Usage: "override the config's number of RL iterations"},
			&cli.BoolFlag{Name: "async", Usage: "overlap each iteration's train with the next iteration's rollout (config async: true)"},
			&cli.StringFlag{Name: "report", Usage: "override the config's HTML report path"},
			&cli.StringFlag{Name: "executor", Value: "local", Usage: "local (in this process) or slurm (each step as Slurm jobs, shardable stages as job arrays)"},
			&cli.IntFlag{Name: "shards", Value: 4, Usage: "slurm executor: shards per shardable stage"},
			&cli.StringFlag{Name: "partition", Usage: "slurm executor: partition"},
			&cli.StringFlag{Name: "time", Usage: "slurm executor: time limit per job"},
		},
		Action: runLoop,
	})
}

// inProcess runs stage commands in this process, against the --lake of c;
// lakeArgs (such as --branch NAME) follow --lake on every command line.
func inProcess(dir string, out io.Writer, lakeArgs ...string) loop.Executor {
	return func(ctx context.Context, command, flags []string) error {
		args := append([]string{"cualake"}, command...)
		args = append(args, "--lake", dir)
		args = append(args, lakeArgs...)
		args = append(args, flags...)
		app := App()
		app.Writer, app.ErrWriter = out, out
		return app.RunContext(ctx, args)
	}
}

func runLoop(c *cli.Context) error {
	cfg, err := loop.Load(c.String("config"))
	if err != nil {
		return err
	}
	if c.IsSet("seed") {
		cfg.Seed = c.Int64("seed")
	}
	if s := c.String("sampler"); s != "" {
		cfg.Sample.Sampler = s
	}
	if n := c.Int("iterations"); n >= 0 {
		cfg.Iterations = n
	}
	if r := c.String("report"); r != "" {
		cfg.Report = r
	}
	if c.Bool("async") {
		cfg.Async = true
	}
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	if err := checkExecutor(c); err != nil {
		return err
	}
	dir := c.String("lake")
	l, err := openLake(c, true)
	if err != nil {
		return err
	}
	// Stage output goes to stderr in --json mode so stdout stays one object.
	log := c.App.Writer
	if c.Bool("json") {
		log = c.App.ErrWriter
	}
	t0 := time.Now()
	mode := "synchronous"
	if cfg.Async {
		mode = "asynchronous"
		log = &lockedWriter{w: log} // two steps write progress at once
	}
	fmt.Fprintf(log, "run %s: %d steps, %d iterations, %s, sampler %s, seed %d, lake %s\n",
		loop.RunID(cfg), len(loop.Plan(cfg)), cfg.Iterations, mode, cfg.Sample.Sampler, cfg.Seed, dir)
	var lakeArgs []string
	if b := c.String("branch"); b != "" {
		lakeArgs = []string{"--branch", b} // every step reads and commits the branch
	}
	exec := inProcess(dir, log, lakeArgs...)
	switch c.String("executor") {
	case "local":
	case "slurm":
		if exec, err = slurmExecutor(c, SlurmOptions{Shards: c.Int("shards"), Partition: c.String("partition"), Time: c.String("time")}); err != nil {
			return err
		}
	default:
		return usageErr("--executor: want local or slurm")
	}
	steps, err := loop.Run(c.Context, l, cfg, exec, log)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Report), 0o755); err != nil {
		return err
	}
	if err := inProcess(dir, io.Discard, lakeArgs...)(c.Context, []string{"notebook", "run"}, []string{"learning", "--out", cfg.Report}); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	sum, err := loopSummary(c.Context, l, cfg)
	if err != nil {
		return err
	}
	sum["run"], sum["report"], sum["seconds"] = loop.RunID(cfg), cfg.Report, time.Since(t0).Seconds()
	snaps := map[string]string{}
	secs := map[string]float64{} // steps run by this process: what the time-left estimate is checked against
	for _, s := range steps {
		snaps[s.Key] = s.Snapshot
		if !s.Resumed {
			secs[s.Key] = s.Seconds
		}
	}
	sum["snapshots"], sum["step_seconds"] = snaps, secs
	if c.Bool("json") {
		return printJSON(c.App.Writer, sum)
	}
	fmt.Fprintf(c.App.Writer, "\nheld-out success: %.1f%% after warm start, %.1f%% after %d iterations\ntraining success by iteration: %v\ntraining tasks with a verified success, after each pass: %v\nreport: %s (%.0fs)\n",
		100*sum["heldout_success_warmstart"].(float64), 100*sum["heldout_success_final"].(float64), cfg.Iterations,
		sum["train_success_by_iteration"], sum["train_tasks_solved_by_iteration"], cfg.Report, time.Since(t0).Seconds())
	return nil
}

// loopSummary reads the learning curve from the lake.
func loopSummary(ctx context.Context, l *lake.Lake, cfg loop.Config) (map[string]any, error) {
	m, err := l.At(ctx, "")
	if err != nil {
		return nil, err
	}
	e, err := query.Open(ctx, l, m)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	res, err := e.Query(ctx, `SELECT source, iteration::BIGINT, avg(CASE WHEN outcome = 'success' THEN 1.0 ELSE 0.0 END)
		FROM trajectories WHERE source IN ('rollout', 'eval') GROUP BY ALL ORDER BY 1, 2`)
	if err != nil {
		return nil, err
	}
	train := []float64{}
	heldout := map[int64]float64{}
	for _, r := range res.Rows {
		it, _ := r[1].(int64)
		rate, _ := r[2].(float64)
		if r[0] == "eval" {
			heldout[it] = rate
		} else {
			train = append(train, rate)
		}
	}
	// Reach: the training tasks with a verified success in any pass up to
	// each one, which bound what RFT can imitate and GRPO can reinforce
	// (the learning report's "Reach" chart).
	reach, err := e.Query(ctx, `WITH first AS (
		  SELECT task_id, min(iteration) AS it FROM trajectories
		  WHERE source = 'rollout' AND outcome = 'success' GROUP BY 1)
		SELECT p.iteration::BIGINT, (SELECT count(*) FROM first WHERE it <= p.iteration)
		FROM (SELECT DISTINCT iteration FROM trajectories WHERE source = 'rollout') p ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("summary: training tasks solved per pass: %w", err)
	}
	solved := map[int64]int64{}
	for _, r := range reach.Rows {
		it, _ := r[0].(int64)
		n, _ := r[1].(int64)
		solved[it] = n
	}
	// The trainer's groups: policy lag of the kept ones, and those dropped
	// as stale (EvoCUA-1.5 5.2), per lag.
	lag, err := e.Query(ctx, `SELECT lag, count(*) FILTER (WHERE kept), count(*) FILTER (WHERE NOT kept)
		FROM train_groups GROUP BY lag ORDER BY lag`)
	if err != nil {
		return nil, err
	}
	hist, stale := map[string]int64{}, int64(0)
	for _, r := range lag.Rows {
		kept, _ := r[1].(int64)
		dropped, _ := r[2].(int64)
		if kept > 0 {
			hist[fmt.Sprint(r[0])] = kept
		}
		stale += dropped
	}
	return map[string]any{
		"async":                           cfg.Async,
		"policy_lag":                      hist,
		"stale_groups":                    stale,
		"heldout_success_warmstart":       heldout[0],
		"heldout_success_final":           heldout[int64(cfg.Iterations)],
		"heldout_success_by_iteration":    heldout,
		"train_success_by_iteration":      train,
		"train_tasks_solved_by_iteration": solved,
		"sampler":                         cfg.Sample.Sampler,
		"seed":                            cfg.Seed,
		"snapshot":                        m.ID,
	}, nil
}

// lockedWriter serialises writes of steps that run at once.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
