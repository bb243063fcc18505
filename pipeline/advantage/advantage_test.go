package advantage

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.15g, want %.15g", what, got, want)
	}
}

func TestGroupAdvantagesHandComputed(t *testing.T) {
	// Rewards 1, 0, 0, 0: mean 0.25, squared deviations 0.5625 + 3 * 0.0625
	// = 0.75; sample std sqrt(0.75/3) = 0.5, population sqrt(0.75/4).
	got, err := GroupAdvantages([]float64{1, 0, 0, 0}, DefaultGRPO())
	if err != nil {
		t.Fatal(err)
	}
	near(t, "A_1 (sample std)", got[0], 0.75/(0.5+1e-6), 1e-12)
	near(t, "A_2 (sample std)", got[1], -0.25/(0.5+1e-6), 1e-12)
	pop, _ := GroupAdvantages([]float64{1, 0, 0, 0}, GRPOParams{Eps: 1e-6})
	near(t, "A_1 (population std)", pop[0], 0.75/(math.Sqrt(0.1875)+1e-6), 1e-12)
	// The incomplete penalty -0.2 against a success and a failure.
	got, _ = GroupAdvantages([]float64{1, 0, -0.2}, DefaultGRPO())
	mean := 0.8 / 3
	std := math.Sqrt(((1-mean)*(1-mean) + mean*mean + (-0.2-mean)*(-0.2-mean)) / 2)
	near(t, "A_3 with incomplete", got[2], (-0.2-mean)/(std+1e-6), 1e-12)
	sum := 0.0
	for _, a := range got {
		sum += a
	}
	near(t, "sum of a group", sum, 0, 1e-12)
}

func TestGroupAdvantagesDegenerate(t *testing.T) {
	for _, rs := range [][]float64{{1}, {0}, {1, 1, 1, 1}, {0, 0}, {-0.2, -0.2}, {}, {0.1, 0.1, 0.1}} {
		got, err := GroupAdvantages(rs, DefaultGRPO())
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range got {
			if a != 0 {
				t.Errorf("rewards %v: A_%d = %v, want 0", rs, i, a)
			}
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(-1)} {
		if _, err := GroupAdvantages([]float64{0, bad}, DefaultGRPO()); !errors.Is(err, ErrBadInput) {
			t.Errorf("reward %v: err %v", bad, err)
		}
	}
	if _, err := GroupAdvantages([]float64{0, 1}, GRPOParams{}); !errors.Is(err, ErrBadParams) {
		t.Errorf("eps 0: err %v", err)
	}
}

// segs builds step items: one per step, for trajectories given as
// (reward, steps) within one group.
func segs(group string, trajs [][2]float64) []schemas.Segment {
	var out []schemas.Segment
	for i, tr := range trajs {
		id := fmt.Sprintf("%s/t%d", group, i)
		for s := 0; s < int(tr[1]); s++ {
			out = append(out, schemas.Segment{SegmentID: fmt.Sprintf("%s/%d", id, s), TrajectoryID: id, GroupID: group, Index: int32(s), Mode: "step", Reward: tr[0]})
		}
	}
	return out
}

func sumBy(ss []schemas.Segment, key func(schemas.Segment) string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range ss {
		out[key(s)] += s.Advantage
	}
	return out
}

func TestSTEPOConservation(t *testing.T) {
	// Successes short, failures long: where naive GRPO's length bias bites.
	items := segs("g1", [][2]float64{{1, 3}, {1, 5}, {0, 20}, {0, 12}})
	items = append(items, segs("g2", [][2]float64{{1, 7}, {0, 2}, {-0.2, 50}})...)
	trajAdv, err := TrajectoryAdvantages([]schemas.Trajectory{
		{TrajectoryID: "g1/t0", GroupID: "g1", Reward: 1}, {TrajectoryID: "g1/t1", GroupID: "g1", Reward: 1},
		{TrajectoryID: "g1/t2", GroupID: "g1", Reward: 0}, {TrajectoryID: "g1/t3", GroupID: "g1", Reward: 0},
		{TrajectoryID: "g2/t0", GroupID: "g2", Reward: 1}, {TrajectoryID: "g2/t1", GroupID: "g2", Reward: 0},
		{TrajectoryID: "g2/t2", GroupID: "g2", Reward: -0.2},
	}, DefaultGRPO())
	if err != nil {
		t.Fatal(err)
	}
	stepo := slices.Clone(items)
	if err := AssignSegments(stepo, ModeSTEPO, DefaultGRPO()); err != nil {
		t.Fatal(err)
	}
	perTraj := sumBy(stepo, func(s schemas.Segment) string { return s.TrajectoryID })
	for id, a := range trajAdv {
		near(t, "STEPO sum over "+id, perTraj[id], a, 1e-12)
	}
	for g, s := range sumBy(stepo, func(s schemas.Segment) string { return s.GroupID }) {
		near(t, "STEPO sum over group "+g, s, 0, 1e-9)
	}
	// Each step item gets A_i / |T_i|.
	near(t, "g1/t2 step", stepo[3+5].Advantage, trajAdv["g1/t2"]/20, 1e-12)

	naive := slices.Clone(items)
	if err := AssignSegments(naive, ModeNaive, DefaultGRPO()); err != nil {
		t.Fatal(err)
	}
	perTraj = sumBy(naive, func(s schemas.Segment) string { return s.TrajectoryID })
	for id, a := range trajAdv {
		steps := 0
		for _, s := range naive {
			if s.TrajectoryID == id {
				steps++
			}
		}
		near(t, "naive sum over "+id, perTraj[id], float64(steps)*a, 1e-9) // eq. 8: |T_i| A_i
	}
	// The length bias: group 1's long failures outweigh its short successes.
	g1 := sumBy(naive, func(s schemas.Segment) string { return s.GroupID })["g1"]
	want := 3*trajAdv["g1/t0"] + 5*trajAdv["g1/t1"] + 20*trajAdv["g1/t2"] + 12*trajAdv["g1/t3"]
	near(t, "naive group sum", g1, want, 1e-9)
	if g1 > -1 {
		t.Errorf("naive group sum %v: long failures should dominate (strongly negative)", g1)
	}
	// Sample-level mean advantage (eq. 9) is nonzero under naive, zero under STEPO.
	var ns, ss float64
	for i := range naive {
		ns += naive[i].Advantage
		ss += stepo[i].Advantage
	}
	if math.Abs(ns/float64(len(naive))) < 0.1 || math.Abs(ss) > 1e-9 {
		t.Errorf("sample means: naive %v, stepo sum %v", ns/float64(len(naive)), ss)
	}
	// GRPO mode assigns A_i to every item, like naive.
	grpo := slices.Clone(items)
	if err := AssignSegments(grpo, ModeGRPO, DefaultGRPO()); err != nil {
		t.Fatal(err)
	}
	for i := range grpo {
		if grpo[i].Advantage != naive[i].Advantage {
			t.Fatalf("grpo and naive differ at item %d", i)
		}
	}
}

func TestAssignSegmentsErrors(t *testing.T) {
	items := segs("g", [][2]float64{{1, 2}, {0, 2}})
	items[1].Reward = 0.5
	if err := AssignSegments(items, ModeSTEPO, DefaultGRPO()); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "g/t0") {
		t.Errorf("disagreeing rewards: err %v", err)
	}
	items = segs("g", [][2]float64{{1, 2}, {0, 2}})
	items[0].Reward = math.NaN()
	if err := AssignSegments(items, ModeSTEPO, DefaultGRPO()); !errors.Is(err, ErrBadInput) {
		t.Errorf("NaN: err %v", err)
	}
	items = segs("", [][2]float64{{1, 1}})
	if err := AssignSegments(items, ModeSTEPO, DefaultGRPO()); !errors.Is(err, ErrBadInput) {
		t.Errorf("no group: err %v", err)
	}
	if err := AssignSegments(segs("g", [][2]float64{{1, 1}}), Mode("bogus"), DefaultGRPO()); !errors.Is(err, ErrBadParams) {
		t.Errorf("bad mode: err %v", err)
	}
	if _, err := StepAdvantage(1, 0, ModeSTEPO); !errors.Is(err, ErrBadInput) {
		t.Errorf("zero steps: err %v", err)
	}
	// A single-rollout group and a zero-variance group give 0, not NaN.
	items = append(segs("solo", [][2]float64{{1, 3}}), segs("flat", [][2]float64{{0, 2}, {0, 4}})...)
	if err := AssignSegments(items, ModeSTEPO, DefaultGRPO()); err != nil {
		t.Fatal(err)
	}
	for _, s := range items {
		if s.Advantage != 0 {
			t.Errorf("%s: advantage %v, want 0", s.SegmentID, s.Advantage)
		}
	}
	if _, err := TrajectoryAdvantages([]schemas.Trajectory{{TrajectoryID: "x", GroupID: "g"}, {TrajectoryID: "x", GroupID: "g"}}, DefaultGRPO()); !errors.Is(err, ErrBadInput) {
		t.Errorf("duplicate trajectory: err %v", err)
	}
}

func TestBatchNormalize(t *testing.T) {
	// VeriCUA's schedule: +1, +0.7, -0.7, -0.3. Mean 0.175, population
	// variance ((0.825)^2 + (0.525)^2 + (0.875)^2 + (0.475)^2) / 4.
	rs := []float64{1, 0.7, -0.7, -0.3}
	got, err := BatchNormalize(rs, nil, DefaultBatchEps)
	if err != nil {
		t.Fatal(err)
	}
	v := (0.825*0.825 + 0.525*0.525 + 0.875*0.875 + 0.475*0.475) / 4
	for i, r := range rs {
		near(t, fmt.Sprintf("A_%d", i), got[i], (r-0.175)/math.Sqrt(v+1e-8), 1e-12)
	}
	// Weights count each reward that many times.
	w, _ := BatchNormalize([]float64{1, 0}, []float64{3, 1}, DefaultBatchEps)
	rep, _ := BatchNormalize([]float64{1, 1, 1, 0}, nil, DefaultBatchEps)
	near(t, "weighted = repeated", w[0], rep[0], 1e-12)
	near(t, "weighted = repeated", w[1], rep[3], 1e-12)
	for _, rs := range [][]float64{{}, {0.7}, {1, 1, 1}} {
		got, err := BatchNormalize(rs, nil, DefaultBatchEps)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range got {
			if a != 0 {
				t.Errorf("%v: %v", rs, got)
			}
		}
	}
	if _, err := BatchNormalize([]float64{math.NaN()}, nil, 1e-8); !errors.Is(err, ErrBadInput) {
		t.Errorf("NaN: err %v", err)
	}
	if _, err := BatchNormalize([]float64{1}, []float64{1, 2}, 1e-8); !errors.Is(err, ErrBadInput) {
		t.Errorf("length mismatch: err %v", err)
	}
	if _, err := BatchNormalize([]float64{1}, nil, 0); !errors.Is(err, ErrBadParams) {
		t.Errorf("eps 0: err %v", err)
	}
}

type item struct {
	group string
	id    int
	ver   int32
}

func TestMiniGroupsNeverSplit(t *testing.T) {
	// Groups of varying size, interleaved, as step items arrive.
	sizes := map[string]int{"a": 5, "b": 3, "c": 9, "d": 1, "e": 4, "f": 12, "g": 2}
	var items []item
	n := 0
	for round := 0; round < 12; round++ {
		for _, g := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			if round < sizes[g] {
				items = append(items, item{g, n, 0})
				n++
			}
		}
	}
	groupOf := func(it item) string { return it.group }
	for _, max := range []int{1, 4, 8, 10, 16, 100} {
		mbs, err := MiniGroups(items, groupOf, max)
		if err != nil {
			t.Fatal(err)
		}
		home := map[string]int{}
		total := 0
		for k, mb := range mbs {
			total += len(mb)
			groupsHere := map[string]bool{}
			for _, it := range mb {
				if h, ok := home[it.group]; ok && h != k {
					t.Fatalf("max %d: group %s split across mini-batches %d and %d", max, it.group, h, k)
				}
				home[it.group] = k
				groupsHere[it.group] = true
			}
			if len(mb) > max && len(groupsHere) > 1 {
				t.Fatalf("max %d: mini-batch %d holds %d items over %d groups", max, k, len(mb), len(groupsHere))
			}
		}
		if total != len(items) {
			t.Fatalf("max %d: %d items out of %d", max, total, len(items))
		}
		again, _ := MiniGroups(items, groupOf, max)
		if fmt.Sprint(again) != fmt.Sprint(mbs) {
			t.Fatalf("max %d: not deterministic", max)
		}
	}
	// Greedy packing, by hand: a5 b3 | c9 | d1 e4 | f12 | g2 with max 8.
	mbs, _ := MiniGroups(items, groupOf, 8)
	var shape []string
	for _, mb := range mbs {
		shape = append(shape, strings.Join(SortedGroupIDs(mb, groupOf), ""))
	}
	if !slices.Equal(shape, []string{"ab", "c", "de", "f", "g"}) {
		t.Errorf("packing %v", shape)
	}
	byCount, err := MiniGroupsByCount(items, groupOf, 3)
	if err != nil || len(byCount) != 3 {
		t.Fatalf("by count: %d mini-batches, %v", len(byCount), err)
	}
	sizes = map[string]int{}
	for _, it := range items {
		sizes[groupOf(it)]++
	}
	seen := map[string]bool{}
	for k, mb := range byCount {
		// exactly 3 whole groups: each group's every item, no other
		n := map[string]int{}
		for _, it := range mb {
			n[groupOf(it)]++
			seen[groupOf(it)] = true
		}
		if len(n) != 3 {
			t.Errorf("mini-batch %d holds %d groups, want exactly 3", k, len(n))
		}
		for g, c := range n {
			if c != sizes[g] {
				t.Errorf("mini-batch %d holds %d of group %s's %d items", k, c, g, sizes[g])
			}
		}
	}
	if len(seen) != len(sizes) {
		t.Errorf("mini-batches cover %d of %d groups", len(seen), len(sizes))
	}
	if _, err := MiniGroupsByCount(items, groupOf, len(sizes)+1); !errors.Is(err, ErrBadInput) {
		t.Errorf("more groups per mini-batch than groups: err %v", err)
	}
	if _, err := MiniGroups(items, groupOf, 0); !errors.Is(err, ErrBadParams) {
		t.Errorf("max 0: err %v", err)
	}
	if _, err := MiniGroups([]item{{"", 0, 0}}, groupOf, 3); !errors.Is(err, ErrBadInput) {
		t.Errorf("empty group: err %v", err)
	}
}

func TestFilterStale(t *testing.T) {
	var items []item
	for v := int32(0); v <= 10; v++ {
		items = append(items, item{"g", int(v), v})
	}
	ver := func(it item) int32 { return it.ver }
	id := func(it item) string { return fmt.Sprintf("item %d", it.id) }
	kept, dropped, err := FilterStale(items, 10, DefaultMaxLag, ver, id)
	if err != nil {
		t.Fatal(err)
	}
	// Versions 7..10 are at most 3 behind; 0..6 are dropped.
	if len(kept) != 4 || kept[0].ver != 7 || len(dropped) != 7 || dropped[6].ver != 6 {
		t.Errorf("kept %v dropped %v", kept, dropped)
	}
	if _, _, err := FilterStale(items, 9, 3, ver, id); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "item 10") {
		t.Errorf("future version: err %v", err)
	}
	if _, _, err := FilterStale(items, 10, -1, ver, id); !errors.Is(err, ErrBadParams) {
		t.Errorf("negative lag: err %v", err)
	}
}
