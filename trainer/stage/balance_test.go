package stage

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

// seg is a segments row of trajectory traj at index with the given token
// ids, trained where mask is 1.
func seg(traj string, index int32, ids []int32, mask []int8) schemas.Segment {
	return schemas.Segment{SegmentID: traj + "/" + string(rune('0'+index)), TrajectoryID: traj, Index: index, InputIDs: ids, LossMask: mask}
}

// TestActionWeights: trajectories whose trained tokens read the same, in
// segment order, share one weight of 1/n, whatever their context tokens
// (another task's instruction) and however their rows are ordered; a
// trajectory whose actions differ, or come in another order, is its own
// sequence.
func TestActionWeights(t *testing.T) {
	rows := []schemas.Segment{
		// a: actions 7 8 | 9, in two windows, the second listed first.
		seg("a", 1, []int32{100, 9}, []int8{0, 1}),
		seg("a", 0, []int32{100, 7, 8}, []int8{0, 1, 1}),
		// b: the same actions over another task's context tokens.
		seg("b", 0, []int32{200, 201, 7, 8}, []int8{0, 0, 1, 1}),
		seg("b", 1, []int32{202, 9}, []int8{0, 1}),
		// c: the same tokens, the windows in the other order: 9 | 7 8.
		seg("c", 0, []int32{100, 9}, []int8{0, 1}),
		seg("c", 1, []int32{100, 7, 8}, []int8{0, 1, 1}),
		// d: a context token that a and b train on is context here.
		seg("d", 0, []int32{7, 8, 9}, []int8{0, 1, 1}),
		// e: the same actions as a and b in one window.
		seg("e", 0, []int32{7, 8, 9}, []int8{1, 1, 1}),
	}
	w, groups, err := ActionWeights(rows)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1, 1, 1, 1.0 / 3}
	if groups != 3 || !slices.Equal(w, want) {
		// a, b, e share one sequence; c and d are one each.
		t.Fatalf("weights %v in %d groups, want %v in 3", w, groups, want)
	}
	bad := []schemas.Segment{seg("x", 0, []int32{1, 2}, []int8{1})}
	if _, _, err := ActionWeights(bad); err == nil || !strings.Contains(err.Error(), `segment "x/0"`) {
		t.Fatalf("a loss mask of the wrong length: %v", err)
	}
}

// TestItemDrawer: unweighted, the drawer is the run's old order (seeded
// permutations, each item once per pass), so a run without --balance keeps
// its bits; weighted, each item is drawn in proportion to its weight, the
// same draws for the same seed.
func TestItemDrawer(t *testing.T) {
	d := newItemDrawer(rand.New(rand.NewPCG(7, 0x5f7)), 5, nil)
	ref := rand.New(rand.NewPCG(7, 0x5f7))
	for pass := 0; pass < 3; pass++ {
		want := ref.Perm(5)
		for _, w := range want {
			if got := d.next(); got != w {
				t.Fatalf("pass %d: drew %d, want %d (the seeded permutation)", pass, got, w)
			}
		}
	}
	weights := []float64{1, 3, 0.5, 0.5}
	draw := func(seed uint64, n int) []int {
		d := newItemDrawer(rand.New(rand.NewPCG(seed, 0x5f7)), len(weights), weights)
		out := make([]int, n)
		for i := range out {
			out[i] = d.next()
		}
		return out
	}
	const n = 50000
	got := draw(3, n)
	if !slices.Equal(got, draw(3, n)) || slices.Equal(got[:100], draw(4, n)[:100]) {
		t.Fatal("weighted draws are not a function of the seed")
	}
	counts := make([]float64, len(weights))
	for _, i := range got {
		counts[i]++
	}
	for i, w := range weights {
		// 5 standard errors of a binomial share: a wrong interval (an
		// off-by-one in the search) moves a share by far more.
		p := w / 5
		if share := counts[i] / n; math.Abs(share-p) > 5*math.Sqrt(p*(1-p)/n) {
			t.Fatalf("item %d drawn %.4f of the time, want %.4f", i, share, p)
		}
	}
}
