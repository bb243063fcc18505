package synthesize

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

// shardedRun evaluates the n shards of a run and replays them.
func shardedRun(t *testing.T, in Input, p Params, n, horizon int) (*Result, error) {
	t.Helper()
	var states []ShardState
	var recs []schemas.Synthesis
	var tasks []schemas.Task
	for i := n - 1; i >= 0; i-- {
		spec := shard.Spec{Index: i, Count: n}
		ev, err := Evaluate(context.Background(), in, p, ShardPlan{Owns: spec.Owns, Horizon: horizon})
		if err != nil {
			t.Fatalf("shard %d/%d: %v", i, n, err)
		}
		states = append(states, ev.State)
		recs = append(recs, ev.Records...)
		tasks = append(tasks, ev.Tasks...)
	}
	return ReplayShards(context.Background(), Input{Tasks: in.Tasks}, states, recs, tasks)
}

func sameResult(t *testing.T, what string, got, want *Result) {
	t.Helper()
	if !reflect.DeepEqual(got.Tasks, want.Tasks) || !reflect.DeepEqual(got.Records, want.Records) || !reflect.DeepEqual(got.Accepted, want.Accepted) {
		t.Fatalf("%s: replayed shards differ from the unsharded run: %d/%d tasks, %d/%d rows, %d/%d accepted",
			what, len(got.Tasks), len(want.Tasks), len(got.Records), len(want.Records), len(got.Accepted), len(want.Accepted))
	}
}

func TestShardedRunEqualsUnsharded(t *testing.T) {
	cfgs := map[string]func(*Params, *Input){
		"default":        func(p *Params, _ *Input) { p.Count = 20 },
		"without-judger": func(p *Params, _ *Input) { p.Count = 30; p.Seed = 5; p.Without = []string{RoleJudger} },
		"flaws-no-fixer": func(p *Params, _ *Input) { p.Count = 15; p.Seed = 2; p.Without = []string{RoleFixer}; p.FlawRate = 0.8 },
		"budget-and-pool": func(p *Params, in *Input) {
			p.Count = 40
			p.Seed = 9
			p.MaxCandidates = 30
			in.Tasks = simdesk.Pool()[:10]
		},
	}
	for name, f := range cfgs {
		t.Run(name, func(t *testing.T) {
			p := DefaultParams()
			p.Workers = 4
			var in Input
			f(&p, &in)
			want, err := Run(context.Background(), in, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 2, 3, 7} {
				got, err := shardedRun(t, in, p, n, 0)
				if err != nil {
					t.Fatalf("N=%d: %v", n, err)
				}
				sameResult(t, name, got, want)
			}
		})
	}
}

func TestShardHorizon(t *testing.T) {
	p := DefaultParams()
	p.Count, p.Workers, p.Seed = 10, 4, 3
	want, err := Run(context.Background(), Input{}, p)
	if err != nil {
		t.Fatal(err)
	}
	// A horizon just past what the run used is enough ...
	got, err := shardedRun(t, Input{}, p, 3, want.Summary.Candidates)
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, "horizon", got, want)
	// ... a shorter one makes the merge say so.
	_, err = shardedRun(t, Input{}, p, 3, 2)
	if err == nil || !strings.Contains(err.Error(), "--horizon") {
		t.Fatalf("short horizon: %v", err)
	}
	p.Proposer = BackendOpenAI
	if err := CheckShardable(p); err == nil {
		t.Fatal("openai proposer: sharding allowed")
	}
}

func TestShardedFromTrajectoriesEqualsUnsharded(t *testing.T) {
	pool := simdesk.Pool()
	var tasks []schemas.Task
	for _, task := range pool {
		if strings.HasPrefix(task.TaskID, "settings-multi-") || strings.HasPrefix(task.TaskID, "files-organize-") ||
			strings.HasPrefix(task.TaskID, "files-mkdir-") || strings.HasPrefix(task.TaskID, "editor-write-") {
			tasks = append(tasks, task)
		}
	}
	rp := rollout.DefaultParams()
	rp.N, rp.MaxTurns, rp.TreeOnly, rp.Workers = 1, 8, true, 4
	in := Input{Tasks: pool}
	emit := func(ep rollout.Episode) error {
		in.Trajectories = append(in.Trajectories, ep.Trajectory)
		in.Steps = append(in.Steps, ep.Steps...)
		return nil
	}
	ctx := context.Background()
	if err := rollout.Run(ctx, tasks, rollout.Random{}, rollout.SimEnvs(rp), rp, emit); err != nil {
		t.Fatal(err)
	}
	rp.Iteration = 1
	if err := rollout.Run(ctx, tasks, rollout.Oracle{}, rollout.SimEnvs(rp), rp, emit); err != nil {
		t.Fatal(err)
	}
	for _, count := range []int{3, 12} {
		p := DefaultParams()
		p.FromTrajectories, p.Count, p.Workers = true, count, 4
		want, err := Run(ctx, in, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 3, 7} {
			got, err := shardedRun(t, in, p, n, 0)
			if err != nil {
				t.Fatalf("count %d N=%d: %v", count, n, err)
			}
			sameResult(t, "from trajectories", got, want)
		}
	}
}
