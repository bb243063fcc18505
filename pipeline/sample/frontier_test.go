package sample

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

func TestFrontierWeightHandValues(t *testing.T) {
	near(t, "w(0.5)", FrontierWeight(0.5, 0.5, 0.25), 1)
	near(t, "w(0.25)", FrontierWeight(0.25, 0.5, 0.25), math.Exp(-0.5)) // 0.0625 / 0.125
	near(t, "w(0.75)", FrontierWeight(0.75, 0.5, 0.25), math.Exp(-0.5))
	near(t, "w(0)", FrontierWeight(0, 0.5, 0.25), math.Exp(-2)) // 0.25 / 0.125
	near(t, "w(1)", FrontierWeight(1, 0.5, 0.25), 0.1353352832366127)
	f := NewFrontier()
	if _, ok := f.Weight(&schemas.PassRate{TaskID: "x"}); ok {
		t.Error("a never-tried task has a frontier weight")
	}
}

func TestFrontierSplit(t *testing.T) {
	for _, c := range []struct{ b, f, u int }{{32, 26, 6}, {16, 13, 3}, {10, 8, 2}, {5, 4, 1}, {3, 2, 1}, {2, 2, 0}, {1, 1, 0}} {
		f, u := FrontierSplit(c.b, 0.2)
		if f != c.f || u != c.u {
			t.Errorf("FrontierSplit(%d) = %d/%d, want %d/%d", c.b, f, u, c.f, c.u)
		}
	}
}

// Rates chosen dyadic so that symmetric pairs tie exactly.
func tiePool() []schemas.PassRate {
	return []schemas.PassRate{
		row("g", 0.875), row("a", 0.5), row("c", 0.625), row("b", 0.375), row("h", -1),
		row("e", 0.75), row("d", 0.25), row("f", 0.125), row("i", 0), row("j", 1),
	}
}

func TestFrontierPoolTopKWithTies(t *testing.T) {
	f := NewFrontier()
	got, err := f.FrontierPoolIDs(tiePool(), 2) // pool of 3B = 6
	if err != nil {
		t.Fatal(err)
	}
	// b/c, d/e and f/g tie by weight; the smaller id wins, f beats g for
	// the last place, and the never-tried h cannot enter.
	want := []string{"a", "b", "c", "d", "e", "f"}
	if !slices.Equal(got, want) {
		t.Errorf("frontier pool = %v, want %v", got, want)
	}
}

func TestFrontierChannelsAndSplit(t *testing.T) {
	pool := synthPool(200, 0.2, 3)
	f := NewFrontier()
	const b = 10
	ids, err := f.FrontierPoolIDs(pool, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 30 {
		t.Fatalf("pool of %d, want 3B = 30", len(ids))
	}
	inPool := map[string]bool{}
	for _, id := range ids {
		inPool[id] = true
	}
	rate := map[string]*float64{}
	for i := range pool {
		rate[pool[i].TaskID] = pool[i].EMA
	}
	unratedPicked := 0
	for it := int32(1); it <= 300; it++ {
		req := Request{Iteration: it, BatchSize: b, Seed: 42}
		rows, err := f.Select(pool, req)
		if err != nil {
			t.Fatal(err)
		}
		checkBatch(t, rows, b, req)
		nf, nu := 0, 0
		for _, r := range rows {
			switch r.Channel {
			case ChannelFrontier:
				nf++
				if !inPool[r.TaskID] {
					t.Fatalf("frontier pick %s is outside the frontier pool", r.TaskID)
				}
				near(t, "frontier row weight", r.Weight, FrontierWeight(*rate[r.TaskID], 0.5, 0.25))
			case ChannelUniform:
				nu++
				if inPool[r.TaskID] {
					t.Fatalf("uniform pick %s is inside the frontier pool", r.TaskID)
				}
				if rate[r.TaskID] == nil {
					unratedPicked++
				}
			default:
				t.Fatalf("channel %q", r.Channel)
			}
		}
		if nf != 8 || nu != 2 {
			t.Fatalf("iteration %d: %d frontier + %d uniform, want 8 + 2", it, nf, nu)
		}
	}
	if unratedPicked == 0 {
		t.Error("never-tried tasks never reached the uniform channel")
	}
}

func TestFrontierSpillOver(t *testing.T) {
	f := NewFrontier()
	// Only 3 rated tasks: the frontier channel takes them all, uniform the rest.
	pool := []schemas.PassRate{row("r1", 0.5), row("r2", 0.4), row("r3", 0.2)}
	for _, id := range []string{"u1", "u2", "u3", "u4", "u5"} {
		pool = append(pool, row(id, -1))
	}
	rows, err := f.Select(pool, Request{Iteration: 1, BatchSize: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkBatch(t, rows, 5, Request{Iteration: 1})
	if c := countChannel(rows, ChannelFrontier); c != 3 {
		t.Errorf("%d frontier picks, want 3", c)
	}
	// Pool as large as the batch: nothing outside, all frontier.
	pool = synthPool(6, 0, 9)
	rows, err = f.Select(pool, Request{Iteration: 1, BatchSize: 6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c := countChannel(rows, ChannelFrontier); c != 6 {
		t.Errorf("%d frontier picks, want 6", c)
	}
}

func countChannel(rows []schemas.Batch, ch string) int {
	n := 0
	for _, r := range rows {
		if r.Channel == ch {
			n++
		}
	}
	return n
}

// With B = 1 the batch is one frontier draw, so over many iterations each
// pool task's frequency must follow w / sum(w).
func TestFrontierFrequenciesMatchWeights(t *testing.T) {
	f := &Frontier{Params: DefaultFrontier()}
	f.Params.PoolFactor = 10
	rates := []float64{0.5, 0.45, 0.6, 0.3, 0.75, 0.2, 0.9, 0.05, 0.35, 0.65}
	var pool []schemas.PassRate
	for i, p := range rates {
		pool = append(pool, row(string(rune('a'+i)), p))
	}
	pool = append(pool, row("unrated", -1))
	const n = 20000
	counts := map[string]int{}
	for it := 0; it < n; it++ {
		rows, err := f.Select(pool, Request{Iteration: int32(it), BatchSize: 1, Seed: 2026})
		if err != nil {
			t.Fatal(err)
		}
		counts[rows[0].TaskID]++
	}
	sum := 0.0
	for _, p := range rates {
		sum += FrontierWeight(p, 0.5, 0.25)
	}
	obs := make([]int, len(rates))
	exp := make([]float64, len(rates))
	for i, p := range rates {
		obs[i] = counts[string(rune('a'+i))]
		exp[i] = n * FrontierWeight(p, 0.5, 0.25) / sum
	}
	if counts["unrated"] != 0 {
		t.Errorf("the never-tried task was drawn %d times by the frontier channel", counts["unrated"])
	}
	if x := chiSquare(obs, exp); x > chi2Crit999[9] {
		t.Errorf("chi-square %.2f > %.2f: observed %v, expected %v", x, chi2Crit999[9], obs, exp)
	}
}

// Draws of k = 2 without replacement must follow successive sampling:
// P(i then j) = w_i / W * w_j / (W - w_i).
func TestWeightedSampleSuccessiveSampling(t *testing.T) {
	w := []float64{1, 2, 3, 0.5, 3.5, 0} // the zero weight is never drawn
	const n = 40000
	rng := rand.New(rand.NewPCG(11, 12))
	counts := map[[2]int]int{}
	for i := 0; i < n; i++ {
		got := weightedSample(rng, len(w), 2, func(i int) float64 { return w[i] })
		counts[[2]int{got[0], got[1]}]++
	}
	total := 0.0
	for _, x := range w {
		total += x
	}
	var obs []int
	var exp []float64
	for i := range w {
		for j := range w {
			if i == j || w[i] == 0 || w[j] == 0 {
				if counts[[2]int{i, j}] != 0 {
					t.Fatalf("pair %d,%d drawn %d times", i, j, counts[[2]int{i, j}])
				}
				continue
			}
			obs = append(obs, counts[[2]int{i, j}])
			exp = append(exp, n*w[i]/total*w[j]/(total-w[i]))
		}
	}
	if x := chiSquare(obs, exp); x > chi2Crit999[19] {
		t.Errorf("chi-square %.2f > %.2f over %d ordered pairs", x, chi2Crit999[19], len(obs))
	}
	// Fewer positive weights than k: only the positive ones come back.
	if got := weightedSample(rng, 3, 3, func(i int) float64 { return []float64{0, 1, 0}[i] }); !slices.Equal(got, []int{1}) {
		t.Errorf("weightedSample with one positive weight = %v", got)
	}
}

func TestUniformSampleFrequencies(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, k, draws = 10, 3, 20000
	obs := make([]int, n)
	for i := 0; i < draws; i++ {
		got := uniformSample(rng, n, k)
		if len(got) != k {
			t.Fatalf("got %d", len(got))
		}
		seen := map[int]bool{}
		for _, g := range got {
			if seen[g] || g < 0 || g >= n {
				t.Fatalf("bad draw %v", got)
			}
			seen[g] = true
			obs[g]++
		}
	}
	exp := make([]float64, n)
	for i := range exp {
		exp[i] = draws * k / n
	}
	if x := chiSquare(obs, exp); x > chi2Crit999[9] {
		t.Errorf("chi-square %.2f: %v", x, obs)
	}
}

func TestSamplersDeterministic(t *testing.T) {
	pool := synthPool(500, 0.1, 4)
	for i := range pool {
		if i%20 == 0 {
			pool[i].Feasible = false
		}
	}
	rev := slices.Clone(pool)
	slices.Reverse(rev)
	init := map[string]float64{}
	for _, r := range pool {
		if r.EMA != nil {
			init[r.TaskID] = *r.EMA
		}
	}
	mk := []func() Sampler{
		func() Sampler { return NewFrontier() },
		func() Sampler { return NewDTAC() },
		func() Sampler { return Uniform{} },
		func() Sampler { return NewCurriculum(init) },
		func() Sampler { return NewDAPO() },
	}
	for _, m := range mk {
		req := Request{Iteration: 7, BatchSize: 40, Seed: 99}
		a, err := m().Select(pool, req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := m().Select(pool, req)
		c, _ := m().Select(rev, req)
		name := m().Name()
		if !slices.Equal(a, b) || !slices.Equal(a, c) {
			t.Errorf("%s: same seed, different batch (or depends on row order)", name)
		}
		req.Seed = 100
		d, _ := m().Select(pool, req)
		if slices.Equal(batchIDs(a), batchIDs(d)) {
			t.Errorf("%s: seeds 99 and 100 gave the same batch", name)
		}
		for _, r := range a {
			if r.Sampler != name {
				t.Errorf("%s: row names sampler %q", name, r.Sampler)
			}
		}
	}
}

func TestSamplerErrors(t *testing.T) {
	pool := synthPool(10, 0, 1)
	out := slices.Clone(pool)
	for i := range out {
		out[i].InPool = false
	}
	samplers := []Sampler{NewFrontier(), NewDTAC(), Uniform{}, NewCurriculum(nil), NewDAPO()}
	for _, s := range samplers {
		cases := []struct {
			name string
			pool []schemas.PassRate
			b    int
			want error
		}{
			{"B=0", pool, 0, ErrBatchSize},
			{"B<0", pool, -3, ErrBatchSize},
			{"B>pool", pool, 11, ErrPoolTooSmall},
			{"empty after filter", out, 1, ErrEmptyPool},
			{"no rows", nil, 1, ErrEmptyPool},
			{"rate 1.5", []schemas.PassRate{row("bad-task", 1.5), row("x", 0.5)}, 1, ErrBadInput},
			{"rate NaN", []schemas.PassRate{row("bad-task", math.NaN()), row("x", 0.5)}, 1, ErrBadInput},
			{"duplicate", []schemas.PassRate{row("bad-task", 0.5), row("bad-task", 0.5)}, 1, ErrBadInput},
		}
		for _, c := range cases {
			_, err := s.Select(c.pool, Request{Iteration: 1, BatchSize: c.b, Seed: 1})
			if !errors.Is(err, c.want) {
				t.Errorf("%s %s: err %v, want %v", s.Name(), c.name, err, c.want)
			}
			if errors.Is(c.want, ErrBadInput) && (err == nil || !strings.Contains(err.Error(), "bad-task")) {
				t.Errorf("%s %s: error %v does not name the task", s.Name(), c.name, err)
			}
		}
	}
	bad := &Frontier{Params: FrontierParams{Mu: 0.5, Sigma: 0, Gamma: 0.2, PoolFactor: 3}}
	if _, err := bad.Select(pool, Request{BatchSize: 1}); !errors.Is(err, ErrBadParams) {
		t.Errorf("sigma 0: err %v", err)
	}
}

func TestExcludeAndRanks(t *testing.T) {
	pool := synthPool(40, 0, 8)
	ex := map[string]bool{}
	for i := 0; i < 30; i++ {
		ex[pool[i].TaskID] = true
	}
	req := Request{Iteration: 3, BatchSize: 10, Seed: 5, Round: 1, FirstRank: 96, Exclude: ex}
	rows, err := Uniform{}.Select(pool, req)
	if err != nil {
		t.Fatal(err)
	}
	checkBatch(t, rows, 10, req)
	for _, r := range rows {
		if ex[r.TaskID] {
			t.Errorf("excluded task %s picked", r.TaskID)
		}
	}
	req.BatchSize = 11
	if _, err := (Uniform{}).Select(pool, req); !errors.Is(err, ErrPoolTooSmall) {
		t.Errorf("exclusion leaves 10 tasks for 11: err %v", err)
	}
}

func TestFillWeights(t *testing.T) {
	rows := []schemas.PassRate{row("a", 0.5), row("b", -1)}
	FillWeights(rows, NewFrontier())
	if rows[0].Weight == nil || *rows[0].Weight != 1 || rows[1].Weight != nil {
		t.Errorf("frontier weights %v %v", rows[0].Weight, rows[1].Weight)
	}
	FillWeights(rows, NewDTAC())
	if *rows[0].Weight != 1 || *rows[1].Weight != 1 {
		t.Errorf("dtac weights %v %v", *rows[0].Weight, *rows[1].Weight)
	}
}
