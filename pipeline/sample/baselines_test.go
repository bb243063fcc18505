package sample

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/cualake/cualake/schemas"
)

func TestCurriculumSchedule(t *testing.T) {
	c := NewCurriculum(nil)
	near(t, "c(1)", c.Competence(1), 0.25)
	near(t, "c(51)", c.Competence(51), math.Sqrt(50*(1-0.0625)/100+0.0625))
	near(t, "c(101)", c.Competence(101), 1)
	near(t, "c(500)", c.Competence(500), 1)
	near(t, "c(0), the initial pass", c.Competence(0), 0.25)

	// 100 tasks, task i has initial rate i/100: the easiest are the highest ids.
	var pool []schemas.PassRate
	init := map[string]float64{}
	for i := 0; i < 100; i++ {
		id := fmt.Sprintf("c%03d", i)
		pool = append(pool, row(id, 0.5))
		init[id] = float64(i) / 100
	}
	pool = append(pool, row("unknown", 0.5)) // no initial rate: last
	c = NewCurriculum(init)
	for it := int32(1); it <= 20; it++ {
		rows, err := c.Select(pool, Request{Iteration: it, BatchSize: 10, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		m := int(math.Ceil(c.Competence(it) * 101))
		for _, r := range rows {
			if r.TaskID == "unknown" || init[r.TaskID] < float64(100-m)/100-1e-9 {
				t.Fatalf("iteration %d (window %d): picked %s with initial rate %v", it, m, r.TaskID, init[r.TaskID])
			}
		}
	}
	// The window never drops below B.
	rows, err := c.Select(pool, Request{Iteration: 1, BatchSize: 40, Seed: 1})
	if err != nil || len(rows) != 40 {
		t.Fatalf("B above the window: %d rows, %v", len(rows), err)
	}
	bad := &Curriculum{Params: CurriculumParams{InitialCompetence: 0, Horizon: 10}}
	if _, err := bad.Select(pool, Request{BatchSize: 1}); !errors.Is(err, ErrBadParams) {
		t.Errorf("c0 = 0: err %v", err)
	}
}

func TestDAPOSelect(t *testing.T) {
	d := NewDAPO()
	if d.GenSize(32) != 96 || d.GenSize(1) != 3 {
		t.Errorf("GenSize = %d, %d", d.GenSize(32), d.GenSize(1))
	}
	pool := synthPool(200, 0.5, 2)
	req := Request{Iteration: 2, BatchSize: 32, Seed: 3}
	rows, err := d.Select(pool, req)
	if err != nil {
		t.Fatal(err)
	}
	checkBatch(t, rows, 96, req)
	if countChannel(rows, ChannelDAPO) != 96 {
		t.Error("DAPO rows must use channel dapo")
	}
	rows, err = d.Select(pool[:50], req)
	if err != nil || len(rows) != 50 {
		t.Errorf("pool of 50: %d rows, %v", len(rows), err)
	}
}

func TestFilterGroups(t *testing.T) {
	var trs []schemas.Trajectory
	trs = append(trs, group("allwin", 1, 4, 4)...)
	trs = append(trs, group("mixed", 1, 4, 1)...)
	trs = append(trs, group("alllose", 1, 4, 0)...)
	trs = append(trs, group("single", 1, 1, 0)...)
	trs = append(trs, traj("i1", "inc", "inc", 1, -0.2, schemas.OutcomeIncomplete), traj("i2", "inc", "inc", 1, 0, schemas.OutcomeFailure))
	kept, dropped, err := FilterGroups(trs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dropped, []string{"allwin/it1", "alllose/it1"}) {
		t.Errorf("dropped %v", dropped)
	}
	var keptGroups []string
	for _, k := range kept {
		if len(keptGroups) == 0 || keptGroups[len(keptGroups)-1] != k.GroupID {
			keptGroups = append(keptGroups, k.GroupID)
		}
	}
	if !slices.Equal(keptGroups, []string{"mixed/it1", "single/it1", "inc"}) || len(kept) != 7 {
		t.Errorf("kept groups %v (%d trajectories)", keptGroups, len(kept))
	}
	bad := append(slices.Clone(trs), traj("nan-traj", "x", "x", 1, math.NaN(), schemas.OutcomeFailure))
	if _, _, err := FilterGroups(bad); !errors.Is(err, ErrBadInput) {
		t.Errorf("NaN reward: err %v", err)
	}
}

func TestDynamicSampling(t *testing.T) {
	ds := NewDynamicSampling(2, DefaultDAPO())
	round1 := append(group("a", 1, 4, 4), group("b", 1, 4, 2)...)
	ready, err := ds.Add(round1)
	if err != nil || ready {
		t.Fatalf("round 1: ready %v err %v", ready, err)
	}
	round2 := append(group("c", 1, 4, 1), group("d", 1, 4, 3)...)
	ready, err = ds.Add(round2)
	if err != nil || !ready {
		t.Fatalf("round 2: ready %v err %v", ready, err)
	}
	got := ds.Batch()
	if len(got) != 8 || got[0].GroupID != "b/it1" || got[7].GroupID != "c/it1" {
		t.Errorf("batch has %d trajectories, first %s last %s; want b then c, d trimmed", len(got), got[0].GroupID, got[7].GroupID)
	}
	if ds.Rounds() != 2 || ds.Kept() != 3 || ds.Dropped() != 1 {
		t.Errorf("rounds %d kept %d dropped %d", ds.Rounds(), ds.Kept(), ds.Dropped())
	}
	if _, err := ds.Add(group("b", 1, 4, 2)); !errors.Is(err, ErrBadInput) {
		t.Errorf("repeated group: err %v", err)
	}

	bounded := NewDynamicSampling(5, DAPOParams{OverSample: 3, MaxGenBatches: 2})
	if _, err := bounded.Add(group("a", 1, 4, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := bounded.Add(group("b", 1, 4, 4)); !errors.Is(err, ErrTooManyGenBatches) {
		t.Errorf("bound reached: err %v", err)
	}
	if _, err := NewDynamicSampling(0, DefaultDAPO()).Add(nil); !errors.Is(err, ErrBatchSize) {
		t.Errorf("want 0: err %v", err)
	}
}

// DAPO's refill draws ceil(3 (B - informative)) new tasks, none of the
// iteration's, ranked after its rows; with B informative groups it draws
// nothing.
func TestDAPORefill(t *testing.T) {
	pool := synthPool(60, 0, 5)
	var trajs []schemas.Trajectory
	var batch []schemas.Batch
	for i := 0; i < 4; i++ {
		task := pool[i].TaskID
		g := task + "/1"
		batch = append(batch, schemas.Batch{Iteration: 1, Rank: int32(i), TaskID: task, Sampler: NameDAPO, Channel: ChannelDAPO, Weight: 1})
		// tasks 0 and 1 informative (rewards 1, 0), 2 and 3 flat (0, 0)
		r := 0.0
		if i < 2 {
			r = 1
		}
		trajs = append(trajs, traj(g+"/0", task, g, 1, r, schemas.OutcomeSuccess), traj(g+"/1", task, g, 1, 0, schemas.OutcomeFailure))
	}
	ref, err := DAPORefill(pool, trajs, batch, 1, 4, 7)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Informative != 2 || ref.Groups != 4 || len(ref.Rows) != 6 {
		t.Fatalf("informative %d of %d, %d refill rows; want 2 of 4, 6 (3 x 2)", ref.Informative, ref.Groups, len(ref.Rows))
	}
	for k, r := range ref.Rows {
		if r.Rank != int32(4+k) || r.Channel != ChannelDAPO || slices.ContainsFunc(batch, func(b schemas.Batch) bool { return b.TaskID == r.TaskID }) {
			t.Fatalf("refill row %+v", r)
		}
	}
	if ref, err := DAPORefill(pool, trajs, batch, 1, 2, 7); err != nil || len(ref.Rows) != 0 {
		t.Fatalf("target met: %+v %v", ref, err)
	}
}
