package segment

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/cualake/cualake/pipeline/advantage"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// TestRunWritesAdvantages: every segment carries its trajectory's GRPO group
// advantage, computed over the whole group from the trajectories table;
// grpo shares A_i by all items of a trajectory in every mode, stepo gives
// each step item A_i/|T_i| so a trajectory's items sum to A_i (EvoCUA-1.5
// eq. 11) and a group's to about 0 (eq. 12). Mixed groups give non-zero
// advantages, uniform groups zero.
func TestRunWritesAdvantages(t *testing.T) {
	enc := newFakeEncoder()
	d := smallData(enc, 40)
	l, _ := commitData(t, filepath.Join(t.TempDir(), "lake"), d, true)
	ctx := context.Background()
	want, err := advantage.TrajectoryAdvantages(d.Trajectories, advantage.DefaultGRPO())
	must(t, err)
	mixed := 0
	for _, a := range want {
		if a != 0 {
			mixed++
		}
	}
	if mixed == 0 {
		t.Fatal("fixture has no group with mixed rewards")
	}
	group := map[string]string{}
	for _, tr := range d.Trajectories {
		group[tr.TrajectoryID] = tr.GroupID
	}
	for _, prm := range []Params{{Mode: ModeTrajectory}, {Mode: ModeWindow, K: 2, Delta: 3}, {Mode: ModeStep, Window: 3},
		{Mode: ModeStep, Window: 3, Advantage: advantage.ModeSTEPO}} {
		m, err := l.At(ctx, lake.MainRef) // each run replaces the previous run's segments
		must(t, err)
		res, err := Run(ctx, l, m, config(enc, prm))
		if err != nil {
			t.Fatalf("%s/%s: %v", prm.Mode, prm.AdvantageMode(), err)
		}
		rows, err := lake.ReadTable(ctx, l, res.Manifest, schemas.Segments)
		must(t, err)
		sum, items := map[string]float64{}, map[string]int{}
		nonZero := 0
		for _, r := range rows {
			sum[r.TrajectoryID] += r.Advantage
			items[r.TrajectoryID]++
			if r.Advantage != 0 {
				nonZero++
			}
			a := want[r.TrajectoryID]
			if prm.AdvantageMode() == advantage.ModeSTEPO {
				a /= float64(r.TrajectorySteps)
			}
			if math.Abs(r.Advantage-a) > 1e-12 {
				t.Fatalf("%s/%s: %s advantage %v, want %v", prm.Mode, prm.AdvantageMode(), r.SegmentID, r.Advantage, a)
			}
		}
		if nonZero == 0 {
			t.Fatalf("%s/%s: every advantage is 0", prm.Mode, prm.AdvantageMode())
		}
		if prm.AdvantageMode() == advantage.ModeSTEPO {
			perGroup := map[string]float64{}
			for id, s := range sum {
				if math.Abs(s-want[id]) > 1e-9 {
					t.Errorf("stepo: trajectory %s items sum to %v, want A_i = %v", id, s, want[id])
				}
				perGroup[group[id]] += s
			}
			for g, s := range perGroup {
				// Trajectories without turns have no items, so only groups
				// whose every rollout has turns must sum to 0.
				complete := true
				for _, tr := range d.Trajectories {
					if tr.GroupID == g && items[tr.TrajectoryID] == 0 {
						complete = false
					}
				}
				if complete && math.Abs(s) > 1e-5 {
					t.Errorf("stepo: group %s sums to %v, want about 0", g, s)
				}
			}
		}
		var rec map[string]any
		if err := json.Unmarshal(res.Manifest.Params, &rec); err != nil || rec["advantage"] != string(prm.AdvantageMode()) {
			t.Errorf("%s: commit params %v (%v) do not record advantage %s", prm.Mode, rec, err, prm.AdvantageMode())
		}
	}
}

// TestSTEPONeedsStepMode: splitting A_i over items is defined for step
// items only; other modes and unknown names are parameter errors.
func TestSTEPONeedsStepMode(t *testing.T) {
	for _, p := range []Params{
		{Mode: ModeWindow, K: 5, Delta: 5, Advantage: advantage.ModeSTEPO},
		{Mode: ModeTrajectory, Advantage: advantage.ModeSTEPO},
		{Mode: ModeStep, Advantage: "naive"},
	} {
		p.Image = DefaultParams().Image
		if err := p.Validate(); !errors.Is(err, ErrParams) {
			t.Errorf("%s/%s: %v, want ErrParams", p.Mode, p.Advantage, err)
		}
	}
}
