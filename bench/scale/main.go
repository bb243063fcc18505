// Command scale writes the inputs of the scaling benchmark
// (scripts/bench-scaling.sh) and is itself its commit measurement: each
// subcommand commits one snapshot to a lake folder through the lake
// package's streaming commit path (lake.NewReplacer, as stages write), with
// rows generated on the fly from a fixed seed, so the process's memory is
// the commit's, not the input's. It prints one JSON object.
//
//	scale steps N LAKE            N steps rows (lake.SyntheticStepsForBench's rows)
//	scale rollouts N TURNS LAKE   N text-only trajectories of TURNS steps, tasks of 8 rollouts
//	scale pool N LAKE             N tasks, their pass rates at iteration 0, 8 rollouts of 32 of them
//	scale select SAMPLER N         no lake: N pass rates in memory, then SAMPLER's Select of B = 32, 3 times
//
// Example:
//
//	go build -o bench/out/scale ./bench/scale
//	bench/out/scale steps 1000000 /tmp/lake
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/sample"
	"github.com/cualake/cualake/schemas"
)

const chunk = 1 << 16 // rows per file, the stages' default

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	usage := fmt.Errorf("usage: scale steps N LAKE | rollouts N TURNS LAKE | pool N LAKE | select frontier|dtac N")
	if len(args) < 3 {
		return usage
	}
	if args[0] == "select" && len(args) == 3 {
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 1 {
			return fmt.Errorf("N %q: want a positive integer", args[2])
		}
		return selectOnly(args[1], n)
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 1 {
		return fmt.Errorf("N %q: want a positive integer", args[1])
	}
	dir := args[len(args)-1]
	l, err := lake.OpenDir(ctx, dir, true)
	if err != nil {
		return fmt.Errorf("lake %s: %w", dir, err)
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		return err
	}
	switch {
	case args[0] == "steps" && len(args) == 3:
		err = steps(ctx, tx, n)
	case args[0] == "rollouts" && len(args) == 4:
		turns, terr := strconv.Atoi(args[2])
		if terr != nil || turns < 1 {
			return fmt.Errorf("TURNS %q: want a positive integer", args[2])
		}
		err = rollouts(ctx, tx, n, turns)
	case args[0] == "pool" && len(args) == 3:
		err = pool(ctx, tx, n)
	default:
		return usage
	}
	if err != nil {
		return fmt.Errorf("%s %d: %w", args[0], n, err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "bench-scale", Message: args[0] + " " + args[1]})
	if err != nil {
		return err
	}
	out := map[string]any{"snapshot": m.ID}
	for name, t := range m.Tables {
		var bytes int64
		for _, f := range t.Files {
			bytes += f.Bytes
		}
		out[name] = map[string]any{"rows": t.Rows, "files": len(t.Files), "bytes": bytes}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// steps commits the rows of lake.SyntheticStepsForBench(n), generated
// row by row.
func steps(ctx context.Context, tx *lake.Txn, n int) error {
	w := lake.NewReplacer(ctx, tx, schemas.Steps, chunk)
	for i := 0; i < n; i++ {
		if err := w.Add(lake.SyntheticStepForBench(i)); err != nil {
			return err
		}
	}
	return w.Close()
}

var targets = []string{"Save button", "File menu", "address bar", "first cell of column B", "Settings icon",
	"OK button of the dialog", "search field", "Documents folder", "font size box", "Close tab button"}

// rollouts commits n trajectories of turns steps each (groups of 8 per
// task), text only as imported logs are: the segment stage renders and
// tokenizes every response. Every step shows one screenshot, sized by
// segment's --image-tokens (no blobs).
func rollouts(ctx context.Context, tx *lake.Txn, n, turns int) error {
	r := rand.New(rand.NewPCG(23, 1))
	tasks := lake.NewReplacer(ctx, tx, schemas.Tasks, chunk)
	for g := 0; g*8 < n; g++ {
		if err := tasks.Add(schemas.Task{TaskID: fmt.Sprintf("task-%07d", g), Domain: "files", Setup: "[]", Judge: "{}", Source: "seed",
			Instruction: fmt.Sprintf("Open report %d.txt in the editor, replace the title with the quarterly figures and save it.", g)}); err != nil {
			return err
		}
	}
	if err := tasks.Close(); err != nil {
		return err
	}
	trajs := lake.NewReplacer(ctx, tx, schemas.Trajectories, chunk)
	sts := lake.NewReplacer(ctx, tx, schemas.Steps, chunk)
	for i := 0; i < n; i++ {
		id, g := fmt.Sprintf("traj-%08d", i), i/8
		reward := float64(r.IntN(2))
		if err := trajs.Add(schemas.Trajectory{TrajectoryID: id, TaskID: fmt.Sprintf("task-%07d", g), Domain: "files",
			GroupID: fmt.Sprintf("group-%07d", g), Policy: "bench", Steps: int32(turns), Reward: reward,
			Outcome: map[bool]string{true: schemas.OutcomeSuccess, false: schemas.OutcomeFailure}[reward > 0], Source: "jsonl"}); err != nil {
			return err
		}
		for t := 0; t < turns; t++ {
			x, y := int32(r.IntN(1001)), int32(r.IntN(1001))
			target := targets[r.IntN(len(targets))]
			text := fmt.Sprintf("Step %d. The screenshot shows the application window with the %s visible near (%d, %d). "+
				"The previous action seems to have worked, so the next thing to do is to click the %s.\nAction: click %d %d", t+1, target, x, y, target, x, y)
			st := schemas.Step{TrajectoryID: id, Step: int32(t), Response: text, RawAction: "click",
				Observation: fmt.Sprintf("%064x", r.IntN(1000))}
			st.SetAction(schemas.Action{Kind: "click", X: &x, Y: &y})
			if err := sts.Add(st); err != nil {
				return err
			}
		}
	}
	if err := trajs.Close(); err != nil {
		return err
	}
	return sts.Close()
}

// pool commits n tasks with their pass rates at iteration 0 (EMAs drawn
// from a fixed seed, 1 in 40 infeasible) and 8 rollouts at iteration 0 of
// 32 of them, so that `cualake sample` has nothing new to fold in and
// selects the batch of iteration 1 over the whole pool.
func pool(ctx context.Context, tx *lake.Txn, n int) error {
	r := rand.New(rand.NewPCG(23, 2))
	tasks := lake.NewReplacer(ctx, tx, schemas.Tasks, chunk)
	rates := lake.NewReplacer(ctx, tx, schemas.PassRates, chunk)
	trajs := lake.NewReplacer(ctx, tx, schemas.Trajectories, chunk)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("task-%08d", i)
		feasible := i%40 != 0
		if err := tasks.Add(schemas.Task{TaskID: id, Domain: "os", Setup: "[]", Judge: "{}", Source: "seed", Feasible: feasible,
			Instruction: "Open the settings and turn on dark mode."}); err != nil {
			return err
		}
		ema := r.Float64()
		rolled := int32(0)
		var obs *float64
		if i < 32 {
			rolled, obs = 8, &ema
		}
		if err := rates.Add(schemas.PassRate{TaskID: id, Iteration: 0, Rollouts: rolled, Successes: rolled / 2, Observed: obs, EMA: &ema,
			InPool: ema >= 0.1 && ema <= 0.9, Feasible: feasible}); err != nil {
			return err
		}
		for j := 0; i < 32 && j < 8; j++ {
			if err := trajs.Add(schemas.Trajectory{TrajectoryID: fmt.Sprintf("%s-%d", id, j), TaskID: id, Domain: "os", GroupID: id + "/0",
				Policy: "bench", Reward: float64(j % 2), Outcome: []string{schemas.OutcomeFailure, schemas.OutcomeSuccess}[j%2], Source: "rollout"}); err != nil {
				return err
			}
		}
	}
	for _, a := range []interface{ Close() error }{tasks, rates, trajs} {
		if err := a.Close(); err != nil {
			return err
		}
	}
	return nil
}

// selectOnly times the sampler's Select alone over an in-memory pool of n
// pass rates (EMAs from a fixed seed, 1 in 40 infeasible), the batch of
// B = 32: the pool is built once, Select runs 3 times; it prints the
// median and the build time.
func selectOnly(name string, n int) error {
	var s sample.Sampler
	switch name {
	case "frontier":
		s = sample.NewFrontier()
	case "dtac":
		s = sample.NewDTAC()
	default:
		return fmt.Errorf("sampler %q: want frontier or dtac", name)
	}
	t0 := time.Now()
	r := rand.New(rand.NewPCG(23, 3))
	pool := make([]schemas.PassRate, n)
	for i := range pool {
		ema := r.Float64()
		pool[i] = schemas.PassRate{TaskID: fmt.Sprintf("task-%08d", i), EMA: &ema, InPool: ema >= 0.1 && ema <= 0.9, Feasible: i%40 != 0}
	}
	build := time.Since(t0).Seconds()
	var secs []float64
	for it := range 3 {
		t0 = time.Now()
		if _, err := s.Select(pool, sample.Request{Iteration: int32(it + 1), BatchSize: 32, Seed: 1}); err != nil {
			return fmt.Errorf("%s select over %d tasks: %w", name, n, err)
		}
		secs = append(secs, time.Since(t0).Seconds())
	}
	slices.Sort(secs)
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"sampler": name, "tasks": n, "select_s": secs[1], "build_s": build})
}
