package audit_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/audit"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// newLake is an empty lake with a pinned clock.
func newLake(t *testing.T) *lake.Lake {
	t.Helper()
	l, err := lake.OpenDir(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return time.Unix(1_700_000_000, 0) }
	return l
}

// commit writes the given tables (a func per table) as one snapshot.
func commit(t *testing.T, l *lake.Lake, fill func(ctx context.Context, tx *lake.Txn) error) *lake.Manifest {
	t.Helper()
	ctx := context.Background()
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := fill(ctx, tx); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func row(t *testing.T, res *audit.Result, metric, group string) schemas.Audit {
	t.Helper()
	for _, r := range res.Rows {
		if r.Metric == metric && r.Group == group {
			return r
		}
	}
	t.Fatalf("audit %s has no row %s/%s", res.Kind, metric, group)
	return schemas.Audit{}
}

func absent(t *testing.T, res *audit.Result, metric, group string) {
	t.Helper()
	for _, r := range res.Rows {
		if r.Metric == metric && r.Group == group {
			t.Errorf("audit %s has a row %s/%s (value %v) that should be absent", res.Kind, metric, group, r.Value)
		}
	}
}

// expect checks a row's value and count.
func expect(t *testing.T, res *audit.Result, metric, group string, value float64, count int64) schemas.Audit {
	t.Helper()
	r := row(t, res, metric, group)
	if math.Abs(r.Value-value) > 1e-9 || r.Count != count {
		t.Errorf("%s %s/%s = %v (count %d), want %v (count %d)", res.Kind, metric, group, r.Value, r.Count, value, count)
	}
	return r
}

func breakdown(t *testing.T, r schemas.Audit, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.Breakdown), v); err != nil {
		t.Fatalf("%s/%s breakdown %q: %v", r.Metric, r.Group, r.Breakdown, err)
	}
}
