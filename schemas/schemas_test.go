package schemas

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
)

// writeZero writes one zero row of the given type with parquet-go.
func writeZero(t *testing.T, rt reflect.Type) []byte {
	t.Helper()
	var buf bytes.Buffer
	schema := parquet.SchemaOf(reflect.New(rt).Interface())
	w := parquet.NewWriter(&buf, schema)
	if err := w.Write(reflect.New(rt).Interface()); err != nil {
		t.Fatalf("%s: write: %v", rt, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestArrowSchemaMatchesParquet proves the derived Arrow schema of every table
// is what Arrow itself reads from the Parquet files the row type produces.
func TestArrowSchemaMatchesParquet(t *testing.T) {
	if len(All()) != 18 {
		t.Fatalf("want 18 tables, have %d", len(All()))
	}
	for _, info := range All() {
		data := writeZero(t, info.RowType)
		pf, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fr.Schema()
		if err != nil {
			t.Fatal(err)
		}
		want := info.Arrow()
		if got.NumFields() != want.NumFields() {
			t.Fatalf("%s: parquet has %d columns, derived schema %d", info.Name, got.NumFields(), want.NumFields())
		}
		for i := range want.Fields() {
			g, w := got.Field(i), want.Field(i)
			if g.Name != w.Name || !arrow.TypeEqual(g.Type, w.Type) || g.Nullable != w.Nullable {
				t.Errorf("%s column %d: parquet gives %s %s nullable=%v, derived %s %s nullable=%v",
					info.Name, i, g.Name, g.Type, g.Nullable, w.Name, w.Type, w.Nullable)
			}
		}
		_ = context.Background()
	}
}

func TestKeysAreColumns(t *testing.T) {
	for _, info := range All() {
		cols := map[string]bool{}
		for _, c := range Columns(info.RowType) {
			if cols[c] {
				t.Errorf("%s: column %s defined twice", info.Name, c)
			}
			cols[c] = true
		}
		for _, k := range append(append([]string{}, info.Key...), info.Partition) {
			if k != "" && !cols[k] {
				t.Errorf("%s: key or partition column %s is not a column", info.Name, k)
			}
		}
	}
}

func TestValidators(t *testing.T) {
	half := 0.5
	bad := 1.5
	okSeg := Segment{SegmentID: "s", TrajectoryID: "t", Mode: "window", InputIDs: []int32{1, 2}, LossMask: []int8{0, 1},
		Logprobs: []float32{0, -0.5}, Tokens: 2, TrainableTokens: 1}
	cases := []struct {
		name  string
		err   error
		field string
	}{
		{"task ok", Tasks.Validate(&Task{TaskID: "a", Domain: "d", Source: "seed", Setup: "[]", Judge: "{}"}), ""},
		{"task no id", Tasks.Validate(&Task{Domain: "d", Source: "seed", Setup: "[]", Judge: "{}"}), "task_id"},
		{"task bad source", Tasks.Validate(&Task{TaskID: "a", Domain: "d", Source: "x", Setup: "[]", Judge: "{}"}), "source"},
		{"task bad judge json", Tasks.Validate(&Task{TaskID: "a", Domain: "d", Source: "seed", Setup: "[]", Judge: "{"}), "judge"},
		{"segment ok", Segments.Validate(&okSeg), ""},
		{"segment lengths", Segments.Validate(&Segment{SegmentID: "s", TrajectoryID: "t", Mode: "window", InputIDs: []int32{1}, LossMask: []int8{1, 1}, Logprobs: []float32{0}}), "loss_mask"},
		{"segment nan", Segments.Validate(&Segment{SegmentID: "s", TrajectoryID: "t", Mode: "window", Reward: math.NaN()}), "reward"},
		{"segment counts", Segments.Validate(&Segment{SegmentID: "s", TrajectoryID: "t", Mode: "step", InputIDs: []int32{1}, LossMask: []int8{1}, Logprobs: []float32{0}, Tokens: 1}), "trainable_tokens"},
		{"pass rate ok", PassRates.Validate(&PassRate{TaskID: "a", EMA: &half, Rollouts: 2, Successes: 1}), ""},
		{"pass rate ema", PassRates.Validate(&PassRate{TaskID: "a", EMA: &bad}), "ema"},
		{"pass rate successes", PassRates.Validate(&PassRate{TaskID: "a", Rollouts: 1, Successes: 2}), "successes"},
		{"trajectory outcome", Trajectories.Validate(&Trajectory{TrajectoryID: "t", TaskID: "a", GroupID: "g", Outcome: "won"}), "outcome"},
		{"step logprobs", Steps.Validate(&Step{TrajectoryID: "t", ActionKind: "click", ResponseIDs: []int32{1, 2}, Logprobs: []float32{-1}}), "logprobs"},
		{"step positive logprob", Steps.Validate(&Step{TrajectoryID: "t", ActionKind: "click", ResponseIDs: []int32{1}, Logprobs: []float32{0.5}}), "logprobs[0]"},
		{"blob hash", Blobs.Validate(&Blob{Hash: "00", Mime: "image/png", Size: 1, Bytes: []byte{1}}), "hash"},
		{"blob ok", Blobs.Validate(&Blob{Hash: HashBytes([]byte{1}), Mime: "image/png", Size: 1, Bytes: []byte{1}}), ""},
		{"batch channel", Batches.Validate(&Batch{TaskID: "a", Channel: "lucky"}), "channel"},
		{"verification verdict", Verifications.Validate(&Verification{TrajectoryID: "t", Strategy: "s", Verdict: "maybe", Criteria: "[]"}), "verdict"},
		{"metric clip", TrainMetrics.Validate(&TrainMetric{Objective: "grpo", ClipFraction: 2}), "clip_fraction"},
	}
	for _, c := range cases {
		if c.field == "" {
			if c.err != nil {
				t.Errorf("%s: unexpected error %v", c.name, c.err)
			}
			continue
		}
		if c.err == nil || !errors.Is(c.err, ErrInvalidRow) || !bytes.Contains([]byte(c.err.Error()), []byte(c.field)) {
			t.Errorf("%s: want an invalid-row error naming %s, got %v", c.name, c.field, c.err)
		}
	}
}

func TestSortIsByKey(t *testing.T) {
	rows := []Step{{TrajectoryID: "b", Step: 1}, {TrajectoryID: "a", Step: 10}, {TrajectoryID: "a", Step: 2}, {TrajectoryID: "a", Step: 2, Sub: 1}}
	Steps.Sort(rows)
	for i := 1; i < len(rows); i++ {
		if Steps.KeyOf(&rows[i-1]) >= Steps.KeyOf(&rows[i]) {
			t.Fatalf("rows out of key order at %d: %v", i, rows)
		}
	}
}
