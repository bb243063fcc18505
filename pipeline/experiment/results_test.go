package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// TestStepSecondsFromTheStepsOwnStart: a step is timed from its own
// transaction's start, not from the commit time of the snapshot it started
// from. That snapshot can be far older than the step: a branch deleted and
// run again recommits identical content, whose manifest keeps its first
// commit's time (here the step starts 4,000 s after it and takes 30 s).
func TestStepSecondsFromTheStepsOwnStart(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	l.Now = func() time.Time { return now }
	commit := func(metric string, begin, end time.Time) string {
		now = begin
		tx, err := l.Begin(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		row := schemas.Audit{Kind: "step", Metric: metric, Group: "g", Params: "{}"}
		if err := lake.AppendTable(ctx, tx, schemas.Audits, []schemas.Audit{row}); err != nil {
			t.Fatal(err)
		}
		now = end
		m, err := tx.Commit(ctx, lake.CommitInfo{Stage: metric})
		if err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	from := commit("segment", time.Unix(990, 0), time.Unix(1000, 0))
	step := commit("train", time.Unix(5000, 0), time.Unix(5030, 0))
	got, err := stepSeconds(ctx, l, step, from)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || *got != 30 {
		t.Fatalf("stepSeconds = %v, want 30 (the step's own start to its commit)", got)
	}
	m, err := l.Snapshot(ctx, step)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := m.ContentHash(); err != nil || id != step {
		t.Fatalf("started_at changed the snapshot id: %s against %s (%v)", id, step, err)
	}
}
