package sample

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

func TestVASWeight(t *testing.T) {
	near(t, "4P(1-P) at 0.5", VASWeight(0.5), 1)
	near(t, "at 0.25", VASWeight(0.25), 0.75)
	near(t, "at 0.125", VASWeight(0.125), 0.4375)
	near(t, "at 0", VASWeight(0), 0)
	near(t, "at 1", VASWeight(1), 0)
}

func TestDTACSplit(t *testing.T) {
	for _, c := range []struct{ b, v, a, i int }{{32, 28, 4, 0}, {40, 34, 5, 1}, {80, 68, 10, 2}, {16, 14, 2, 0}, {8, 7, 1, 0}} {
		v, a, i := DTACSplit(c.b, DefaultDTAC())
		if v != c.v || a != c.a || i != c.i {
			t.Errorf("DTACSplit(%d) = %d/%d/%d, want %d/%d/%d", c.b, v, a, i, c.v, c.a, c.i)
		}
	}
}

func mixedPool(n, infeasibleEvery int, seed uint64) []schemas.PassRate {
	pool := synthPool(n, 0.05, seed)
	for i := range pool {
		if i%infeasibleEvery == 0 {
			pool[i].Feasible = false
		}
	}
	return pool
}

func TestICSCounts(t *testing.T) {
	pool := mixedPool(400, 10, 2) // 40 infeasible
	feasible := map[string]bool{}
	for _, r := range pool {
		feasible[r.TaskID] = r.Feasible
	}
	for _, c := range []struct{ b, ics int }{{32, 0}, {39, 0}, {40, 1}, {80, 2}, {120, 3}} {
		d := NewDTAC()
		req := Request{Iteration: 1, BatchSize: c.b, Seed: 3}
		rows, err := d.Select(pool, req)
		if err != nil {
			t.Fatal(err)
		}
		checkBatch(t, rows, c.b, req)
		for _, r := range rows {
			if (r.Channel == ChannelICS) == feasible[r.TaskID] {
				t.Errorf("B=%d: %s channel %s feasible %v", c.b, r.TaskID, r.Channel, feasible[r.TaskID])
			}
		}
		if got := countChannel(rows, ChannelICS); got != c.ics {
			t.Errorf("B=%d: %d ICS picks, want floor(0.025 B) = %d", c.b, got, c.ics)
		}
		// An empty buffer: the AdaPR share goes to VAS.
		if got := countChannel(rows, ChannelVAS); got != c.b-c.ics {
			t.Errorf("B=%d: %d VAS picks, want %d", c.b, got, c.b-c.ics)
		}
	}
	// No infeasible task at all: ICS is empty, VAS takes its share.
	rows, err := NewDTAC().Select(synthPool(200, 0, 1), Request{Iteration: 1, BatchSize: 80, Seed: 1})
	if err != nil || countChannel(rows, ChannelICS) != 0 || countChannel(rows, ChannelVAS) != 80 {
		t.Errorf("no infeasible tasks: %v, %d ICS", err, countChannel(rows, ChannelICS))
	}
	// Feasible tasks run out: ICS takes the rest.
	small := mixedPool(10, 2, 1) // 5 feasible, 5 infeasible
	rows, err = NewDTAC().Select(small, Request{Iteration: 1, BatchSize: 8, Seed: 1})
	if err != nil || countChannel(rows, ChannelVAS) != 5 || countChannel(rows, ChannelICS) != 3 {
		t.Errorf("feasible shortfall: %v, vas %d ics %d", err, countChannel(rows, ChannelVAS), countChannel(rows, ChannelICS))
	}
}

func TestDTACAllRatesDegenerate(t *testing.T) {
	var pool []schemas.PassRate
	for i := 0; i < 20; i++ {
		pool = append(pool, row(fmt.Sprintf("t%02d", i), float64(i%2))) // every weight 0
	}
	req := Request{Iteration: 1, BatchSize: 8, Seed: 1}
	rows, err := NewDTAC().Select(pool, req)
	if err != nil {
		t.Fatal(err)
	}
	checkBatch(t, rows, 8, req)
	for _, r := range rows {
		if r.Weight != 0 || r.Channel != ChannelVAS {
			t.Errorf("row %+v", r)
		}
	}
}

func TestAdaPRBufferAdmission(t *testing.T) {
	p := DefaultDTAC()
	rows := []schemas.PassRate{
		{TaskID: "in", Iteration: 2, EMA: f64(0.25), Feasible: true, InPool: true},
		{TaskID: "edge-lo", Iteration: 2, EMA: f64(0.125), Feasible: true, InPool: true},
		{TaskID: "edge-hi", Iteration: 2, EMA: f64(0.375), Feasible: true, InPool: true},
		{TaskID: "easy", Iteration: 2, EMA: f64(0.5), Feasible: true, InPool: true},
		{TaskID: "hard", Iteration: 2, EMA: f64(0.1), Feasible: true, InPool: true},
		{TaskID: "nosuccess", Iteration: 2, EMA: f64(0.25), Feasible: true, InPool: true},
		{TaskID: "infeasible", Iteration: 2, EMA: f64(0.25), Feasible: false, InPool: true},
	}
	groups := []GroupOutcome{
		{GroupID: "g-in-a", TaskID: "in", Iteration: 2, Rollouts: 8, Successes: 2},
		{GroupID: "g-in-b", TaskID: "in", Iteration: 2, Rollouts: 8, Successes: 3}, // more successes wins
		{GroupID: "g-lo", TaskID: "edge-lo", Iteration: 2, Rollouts: 8, Successes: 1},
		{GroupID: "g-hi", TaskID: "edge-hi", Iteration: 2, Rollouts: 8, Successes: 3},
		{GroupID: "g-easy", TaskID: "easy", Iteration: 2, Rollouts: 8, Successes: 4},
		{GroupID: "g-hard", TaskID: "hard", Iteration: 2, Rollouts: 8, Successes: 1},
		{GroupID: "g-none", TaskID: "nosuccess", Iteration: 2, Rollouts: 8, Successes: 0},
		{GroupID: "g-inf", TaskID: "infeasible", Iteration: 2, Rollouts: 8, Successes: 2},
	}
	b := NewReplayBuffer()
	if err := b.Observe(groups, rows, p); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range b.Items() {
		got = append(got, it.TaskID+"="+it.GroupID)
	}
	want := []string{"edge-hi=g-hi", "edge-lo=g-lo", "in=g-in-b"}
	if !slices.Equal(got, want) {
		t.Errorf("buffer = %v, want %v", got, want)
	}
	bad := []GroupOutcome{{GroupID: "g", TaskID: "missing", Iteration: 2, Successes: 1}}
	if err := b.Observe(bad, rows, p); !errors.Is(err, ErrBadInput) {
		t.Errorf("group of unknown task: err %v", err)
	}
}

func TestAdaPRReplayCap(t *testing.T) {
	pool := synthPool(100, 0, 6)
	d := NewDTAC()
	d.Params.AdaPRRatio = 0.5 // room for every live item each iteration
	d.Buffer.items["task-0000003"] = &ReplayItem{TaskID: "task-0000003", GroupID: "g3", Iteration: 0}
	d.Buffer.items["task-0000007"] = &ReplayItem{TaskID: "task-0000007", GroupID: "g7", Iteration: 0, Replays: 2}
	replays := map[string]int{}
	for it := int32(1); it <= 6; it++ {
		rows, err := d.Select(pool, Request{Iteration: it, BatchSize: 8, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rows {
			if r.Channel == ChannelAdaPR {
				replays[r.TaskID]++
				n++
			}
		}
		if n != len(d.Replayed) {
			t.Fatalf("iteration %d: %d adapr rows, %d replayed items", it, n, len(d.Replayed))
		}
	}
	if replays["task-0000003"] != 3 || replays["task-0000007"] != 1 {
		t.Errorf("replays %v, want 3 and 1 (the cap is 3 per item)", replays)
	}
	if len(d.Buffer.Items()) != 0 {
		t.Errorf("buffer still holds %v", d.Buffer.Items())
	}
}

// A run in memory and the sample stage, which stores the buffer as
// replay_buffer rows and reads it back every iteration, must agree at every
// iteration; replays reach the cap and leave, and stale groups leave.
func TestBufferPersistedByTheStage(t *testing.T) {
	const nTasks, b, n = 120, 16, 8
	truth := map[string]float64{}
	tasks := make([]schemas.Task, nTasks)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range tasks {
		tasks[i] = schemas.Task{TaskID: fmt.Sprintf("t%03d", i), Feasible: i%15 != 0}
		truth[tasks[i].TaskID] = rng.Float64() * 0.6
	}
	pool, err := NewPool(tasks, 0)
	if err != nil {
		t.Fatal(err)
	}
	rollout := func(task string, it int32) []schemas.Trajectory {
		var out []schemas.Trajectory
		g := fmt.Sprintf("%s/%d", task, it)
		for j := 0; j < n; j++ {
			r, o := 0.0, schemas.OutcomeFailure
			if rng.Float64() < truth[task] {
				r, o = 1, schemas.OutcomeSuccess
			}
			out = append(out, traj(fmt.Sprintf("%s/%d", g, j), task, g, it, r, o))
		}
		return out
	}
	var trs []schemas.Trajectory
	for _, tk := range tasks {
		trs = append(trs, rollout(tk.TaskID, 0)...)
	}
	d := NewDTAC()
	d.Params.AdaPRRatio = 0.5 // replays often enough to reach the cap
	ema := EvoCUAEMA()
	ema.PMin, ema.PMax = 0, 1
	p := DefaultStageParams()
	p.Sampler, p.BatchSize, p.Seed, p.EMA, p.DTAC = NameDTAC, b, 77, ema, d.Params
	in := StageInput{Tasks: tasks, PolicyVersion: -1}
	step := func(it int32, trs []schemas.Trajectory) {
		pool, err = UpdateEMA(pool, trs, it, ema)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := GroupOutcomes(trs)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Buffer.Observe(gs, pool, d.Params); err != nil {
			t.Fatal(err)
		}
		in.Trajectories = append(in.Trajectories, trs...)
	}
	step(0, trs)
	replayed, capped := 0, 0
	for it := int32(1); it <= 25; it++ {
		rows, err := d.Select(pool, Request{Iteration: it, BatchSize: b, Seed: 77})
		if err != nil {
			t.Fatal(err)
		}
		out, err := RunStage(in, p)
		if err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		if !slices.Equal(out.Batch, rows) {
			t.Fatalf("iteration %d: the stage picked %v, in memory %v", it, out.Batch, rows)
		}
		var live []ReplayItem
		for _, r := range out.Buffer {
			if r.State == schemas.ReplayLive {
				live = append(live, ReplayItem{TaskID: r.TaskID, GroupID: r.GroupID, Iteration: r.GroupIteration, Replays: r.Replays,
					PolicyVersion: r.PolicyVersion, Trajectories: r.Trajectories, Successes: r.Successes})
			}
			if r.State == schemas.ReplayCapped {
				capped++
				if r.Replays != d.Params.MaxReplays || !r.Replayed {
					t.Fatalf("capped row %+v", r)
				}
			}
		}
		if fmt.Sprint(live) != fmt.Sprint(d.Buffer.Items()) {
			t.Fatalf("iteration %d: stored buffer %v, in memory %v", it, live, d.Buffer.Items())
		}
		in.History = append(in.History, out.PassRates...)
		in.Batches = append(in.Batches, out.Batch...)
		in.Buffer = append(in.Buffer, out.Buffer...)
		trs = nil
		for _, r := range rows {
			if r.Channel == ChannelAdaPR {
				replayed++
				continue // replays reuse the buffered group; no new rollouts
			}
			trs = append(trs, rollout(r.TaskID, it)...)
		}
		step(it, trs)
	}
	if replayed == 0 || capped == 0 {
		t.Fatalf("replayed %d, capped %d: the test exercises nothing", replayed, capped)
	}
	// Policy version 10 puts every group (version 0) out of the window.
	in.PolicyVersion = 10
	out, err := RunStage(in, p)
	if err != nil {
		t.Fatal(err)
	}
	stale := 0
	for _, r := range out.Buffer {
		if r.State == schemas.ReplayLive {
			t.Fatalf("live after every group went stale: %+v", r)
		}
		if r.State == schemas.ReplayStale {
			stale++
		}
		if r.Replayed {
			t.Fatalf("a stale group was replayed: %+v", r)
		}
	}
	if stale == 0 {
		t.Fatal("nothing went stale")
	}
	// Two live groups of one task: an inconsistent table, named.
	bad := []schemas.ReplayItem{{Iteration: 3, TaskID: "t001", GroupID: "a", State: schemas.ReplayLive, Trajectories: []string{"x"}},
		{Iteration: 3, TaskID: "t001", GroupID: "b", State: schemas.ReplayLive, Trajectories: []string{"y"}}}
	if _, err := BufferFromRows(bad, 4); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "t001") {
		t.Errorf("two live groups: err %v", err)
	}
}

// VAS draws follow 4P(1-P): with B = 1 and no buffer or ICS share, the
// frequency of each task over many iterations is proportional to it.
func TestVASFrequencies(t *testing.T) {
	rates := []float64{0.5, 0.3, 0.1, 0.8, 0.6, 0.95}
	var pool []schemas.PassRate
	for i, p := range rates {
		pool = append(pool, row(fmt.Sprintf("v%d", i), p))
	}
	d := NewDTAC()
	const n = 20000
	counts := map[string]int{}
	for it := 0; it < n; it++ {
		rows, err := d.Select(pool, Request{Iteration: int32(it), BatchSize: 1, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		counts[rows[0].TaskID]++
	}
	sum := 0.0
	for _, p := range rates {
		sum += VASWeight(p)
	}
	obs := make([]int, len(rates))
	exp := make([]float64, len(rates))
	for i, p := range rates {
		obs[i] = counts[fmt.Sprintf("v%d", i)]
		exp[i] = n * VASWeight(p) / sum
	}
	if x := chiSquare(obs, exp); x > chi2Crit999[5] {
		t.Errorf("chi-square %.2f: observed %v expected %v", x, obs, exp)
	}
}

// At the demo's B = 32, --ics-ratio 0.04 (or 1/32) makes ICS draw one
// infeasible task every batch, where the paper's 0.025 draws none.
func TestICSRatioAtDemoBatch(t *testing.T) {
	pool := synthPool(200, 0, 3)
	for i := 0; i < 200; i += 10 {
		pool[i].Feasible = false
	}
	cases := []struct {
		ratio float64
		b     int
		want  int
	}{{0.025, 32, 0}, {0.04, 32, 1}, {1.0 / 32, 32, 1}, {0.1, 32, 3}}
	for _, c := range cases {
		d := NewDTAC()
		d.Params.ICSRatio = c.ratio
		for it := int32(1); it <= 5; it++ {
			rows, err := d.Select(pool, Request{Iteration: it, BatchSize: c.b, Seed: 9})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range rows {
				if r.Channel == ChannelICS {
					n++
					if pool[slices.IndexFunc(pool, func(p schemas.PassRate) bool { return p.TaskID == r.TaskID })].Feasible {
						t.Fatalf("ICS drew feasible task %s", r.TaskID)
					}
				}
			}
			if n != c.want || len(rows) != c.b {
				t.Fatalf("rho %v, B %d: %d ICS tasks of %d, want %d", c.ratio, c.b, n, len(rows), c.want)
			}
		}
	}
}

// TestDTACValidateNamesField: a bad DTAC parameter is named with its flag
// and range, not dumped as the whole struct.
func TestDTACValidateNamesField(t *testing.T) {
	for _, tc := range []struct {
		set  func(*DTACParams)
		want string
	}{
		{func(p *DTACParams) { p.ICSRatio = -1 }, "ICSRatio (--ics-ratio) is -1, want [0, 1]"},
		{func(p *DTACParams) { p.AdaPRRatio = 2 }, "AdaPRRatio (--adapr-ratio) is 2, want [0, 1]"},
		{func(p *DTACParams) { p.AdaPRRatio, p.ICSRatio = 0.6, 0.6 }, "AdaPRRatio (--adapr-ratio) 0.6 + ICSRatio (--ics-ratio) 0.6 is over 1"},
		{func(p *DTACParams) { p.MaxReplays = 0 }, "MaxReplays (--replay-cap) is 0, want >= 1"},
		{func(p *DTACParams) { p.MaxStale = -1 }, "MaxStale (--max-stale) is -1, want >= 0"},
	} {
		p := DefaultDTAC()
		tc.set(&p)
		err := p.Validate()
		if err == nil || !errors.Is(err, ErrBadParams) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "{") {
			t.Errorf("Validate() = %v, want ErrBadParams naming %q and no struct dump", err, tc.want)
		}
	}
	if err := DefaultDTAC().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
