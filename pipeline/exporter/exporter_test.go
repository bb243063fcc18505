package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/cualake/cualake/pipeline/importer"
	"github.com/cualake/cualake/pipeline/importer/osworld"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// osworldSample finds the OSWorld sample at ../shared/data/osworld next to
// the repository root (the folder with go.mod), or skips.
func osworldSample(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = filepath.Dir(dir)
	}
	p := filepath.Join(dir, "..", "shared", "data", "osworld")
	if _, err := os.Stat(filepath.Join(p, "examples")); err != nil {
		t.Skipf("OSWorld task sample not found at %s: %v", p, err)
	}
	return p
}

func newLake(t *testing.T) *lake.Lake {
	t.Helper()
	l, err := lake.OpenDir(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return time.Unix(0, 0) }
	return l
}

// sampleLake imports the OSWorld sample plus two tasks cualake made itself
// (no Raw), and returns the head.
func sampleLake(t *testing.T) (*lake.Lake, *lake.Manifest) {
	t.Helper()
	ctx := context.Background()
	l := newLake(t)
	if _, err := importer.Run(ctx, l, importer.Options{Kind: importer.KindOSWorldTasks, Paths: []string{osworldSample(t)}}); err != nil {
		t.Fatal(err)
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	made := []schemas.Task{
		{TaskID: "syn-0001", Domain: "os", App: "terminal", Instruction: "Create notes.txt on the Desktop.", Setup: `[{"type":"execute","parameters":{"command":["true"]}}]`,
			Judge:    `{"func":"exact_match","result":{"type":"vm_command_line","command":"ls ~/Desktop"},"expected":{"type":"rule","rules":{"expected":"notes.txt\n"}}}`,
			Feasible: true, Abilities: []string{"files"}, Source: schemas.SourceSynthesized, Split: "heldout"},
		{TaskID: "syn-0002", Domain: "chrome", Instruction: "Say <hi> & bye", Setup: "[]", Judge: `{"func":"infeasible"}`, Source: schemas.SourceComposed},
	}
	if err := lake.AppendTable(ctx, tx, schemas.Tasks, made); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "synthesize"})
	if err != nil {
		t.Fatal(err)
	}
	return l, m
}

func TestOSWorldRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := osworldSample(t)
	l, m := sampleLake(t)
	out := filepath.Join(t.TempDir(), "pool")
	rep, err := OSWorldTasks(ctx, l, m, out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tasks != 183 || rep.FromRaw != 181 || rep.Domains["chrome"] != 47 {
		t.Fatalf("%+v", rep)
	}
	// Imported tasks come back byte-identical.
	files, _ := filepath.Glob(filepath.Join(src, "examples", "*", "*.json"))
	for _, f := range files {
		rel, _ := filepath.Rel(src, f)
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(out, rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s: not byte-identical after export (%v)", rel, err)
		}
	}
	// test_all.json lists every task by domain and matches the sample's
	// index after normalisation (sorted ids), plus the two made tasks.
	var got, want map[string][]string
	b, _ := os.ReadFile(filepath.Join(out, "test_all.json"))
	json.Unmarshal(b, &got)
	b, _ = os.ReadFile(filepath.Join(src, "test_all.json"))
	json.Unmarshal(b, &want)
	for d, ids := range want {
		extra := map[string]int{"os": 1, "chrome": 1}[d]
		if len(got[d]) != len(ids)+extra {
			t.Errorf("test_all.json domain %s: %d ids, want %d", d, len(got[d]), len(ids)+extra)
		}
	}
	// A task without Raw is built from its columns and reads back through
	// our own parser with the same columns.
	built, _ := os.ReadFile(filepath.Join(out, "examples", "os", "syn-0001.json"))
	task, err := osworld.ParseTask("examples/os/syn-0001.json", "os", built)
	if err != nil {
		t.Fatalf("built task does not parse: %v\n%s", err, built)
	}
	if task.Instruction != "Create notes.txt on the Desktop." || task.Judge != `{"func":"exact_match","result":{"type":"vm_command_line","command":"ls ~/Desktop"},"expected":{"type":"rule","rules":{"expected":"notes.txt\n"}}}` ||
		task.Setup != `[{"type":"execute","parameters":{"command":["true"]}}]` || task.App != "terminal" || !task.Feasible {
		t.Fatalf("%+v", task)
	}
	var obj map[string]any
	json.Unmarshal(built, &obj)
	if obj["snapshot"] != "os" || obj["source"] != "cualake:synthesized" {
		t.Fatalf("%s", built)
	}
	b2, _ := os.ReadFile(filepath.Join(out, "examples", "chrome", "syn-0002.json"))
	if !strings.Contains(string(b2), `"Say <hi> & bye"`) || !strings.Contains(string(b2), `"infeasible"`) {
		t.Fatalf("%s", b2)
	}
	// The export re-imports into the same rows (Origin and Source aside for
	// the built tasks, which are now "imported" files).
	l2 := newLake(t)
	if _, err := importer.Run(ctx, l2, importer.Options{Kind: importer.KindOSWorldTasks, Paths: []string{out}}); err != nil {
		t.Fatal(err)
	}
	m2, _ := l2.At(ctx, "")
	orig, _ := lake.ReadTable(ctx, l, m, schemas.Tasks)
	back, _ := lake.ReadTable(ctx, l2, m2, schemas.Tasks)
	schemas.Tasks.Sort(orig)
	schemas.Tasks.Sort(back)
	if len(orig) != len(back) {
		t.Fatalf("%d tasks back, want %d", len(back), len(orig))
	}
	for i := range orig {
		a, b := orig[i], back[i]
		if a.Raw != "" && !reflect.DeepEqual(a, b) {
			t.Fatalf("%s differs after the round trip", a.TaskID)
		}
		if a.TaskID != b.TaskID || a.Instruction != b.Instruction || a.Judge != b.Judge || a.Setup != b.Setup || a.Feasible != b.Feasible {
			t.Fatalf("%s: columns differ after the round trip:\n%+v\n%+v", a.TaskID, a, b)
		}
	}
	// An existing export is not overwritten.
	if _, err := OSWorldTasks(ctx, l, m, out); err == nil {
		t.Fatal("export into a folder with tasks succeeded")
	}
}

// sameShape compares column names, types and nullability, ignoring the
// field-id metadata Parquet adds.
func sameShape(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		x, y := a.Field(i), b.Field(i)
		if x.Name != y.Name || x.Nullable != y.Nullable || !arrow.TypeEqual(x.Type, y.Type) {
			return false
		}
	}
	return true
}

func readParquet(t *testing.T, path string) arrow.Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// rowsJSON returns the table's rows as JSON objects, the way pandas and
// verl's RLHFDataset see them.
func rowsJSON(t *testing.T, tbl arrow.Table) []map[string]any {
	t.Helper()
	tr := array.NewTableReader(tbl, 1<<20)
	defer tr.Release()
	var out []map[string]any
	for tr.Next() {
		b, err := tr.RecordBatch().MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var rows []map[string]any
		if err := json.Unmarshal(b, &rows); err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
	}
	return out
}

func TestVerlPool(t *testing.T) {
	ctx := context.Background()
	l, m := sampleLake(t)
	out := filepath.Join(t.TempDir(), "pool.parquet")
	rep, err := Verl(ctx, l, m, out, VerlOptions{})
	if err != nil || rep.Rows != 183 || rep.Shape != "pool" {
		t.Fatalf("%+v %v", rep, err)
	}
	tbl := readParquet(t, out)
	if !sameShape(tbl.Schema(), VerlPromptSchema(false)) {
		t.Fatalf("schema read back:\n%s", tbl.Schema())
	}
	tasks, _ := lake.ReadTable(ctx, l, m, schemas.Tasks)
	byID := map[string]schemas.Task{}
	for _, task := range tasks {
		byID[task.TaskID] = task
	}
	rows := rowsJSON(t, tbl)
	for i, r := range rows {
		ex := r["extra_info"].(map[string]any)
		task := byID[ex["task_id"].(string)]
		prompt := r["prompt"].([]any)
		msg := prompt[0].(map[string]any)
		rm := r["reward_model"].(map[string]any)
		if len(prompt) != 1 || msg["role"] != "user" || msg["content"] != task.Instruction || r["data_source"] != "cualake/"+task.Domain ||
			rm["style"] != "rule" || rm["ground_truth"] != task.Judge || ex["index"] != float64(i) || ex["feasible"] != task.Feasible {
			t.Fatalf("row %d: %v", i, r)
		}
		if task.TaskID == "syn-0001" && ex["split"] != "heldout" || task.TaskID != "syn-0001" && ex["split"] != "train" {
			t.Fatalf("row %d split %v", i, ex["split"])
		}
	}
	// Deterministic: the same snapshot gives the same bytes.
	out2 := filepath.Join(t.TempDir(), "again.parquet")
	if _, err := Verl(ctx, l, m, out2, VerlOptions{}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if !bytes.Equal(a, b) {
		t.Fatal("two exports of one snapshot differ")
	}
}

func TestVerlBatchAndSegments(t *testing.T) {
	ctx := context.Background()
	l, _ := sampleLake(t)
	tx, _ := l.Begin(ctx, "")
	picks := []schemas.Batch{
		{Iteration: 3, Rank: 1, TaskID: "syn-0001", Sampler: "frontier", Channel: "uniform", Weight: 0.5},
		{Iteration: 3, Rank: 0, TaskID: "bb5e4c0d-f964-439c-97b6-bdb9747de3f4", Sampler: "frontier", Channel: "frontier", Weight: 0.9},
		{Iteration: 3, Rank: 2, TaskID: "syn-0001", Sampler: "frontier", Channel: "adapr", Weight: 0.25},
		{Iteration: 4, Rank: 0, TaskID: "syn-0002", Sampler: "frontier", Channel: "ics", Weight: 1},
	}
	segs := []schemas.Segment{
		{SegmentID: "s1", TrajectoryID: "tr1", TaskID: "syn-0001", GroupID: "g1", Index: 0, Mode: "window", InputIDs: []int32{1, 2, 3},
			LossMask: []int8{0, 1, 1}, Logprobs: []float32{0, -0.5, -0.25}, HasLogprobs: true, Tokens: 3, TrainableTokens: 2, Reward: 1, Advantage: 0.7, PolicyVersion: 2},
		{SegmentID: "s2", TrajectoryID: "tr2", TaskID: "syn-0001", GroupID: "g1", Index: 0, Mode: "window", InputIDs: []int32{4},
			LossMask: []int8{1}, Logprobs: []float32{-1}, Tokens: 1, TrainableTokens: 1, Advantage: -0.7, PolicyVersion: 2},
	}
	if err := lake.AppendTable(ctx, tx, schemas.Batches, picks); err != nil {
		t.Fatal(err)
	}
	if err := lake.AppendTable(ctx, tx, schemas.Segments, segs); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "sample"})
	if err != nil {
		t.Fatal(err)
	}
	it := int32(3)
	out := filepath.Join(t.TempDir(), "batch.parquet")
	if rep, err := Verl(ctx, l, m, out, VerlOptions{Batch: &it}); err != nil || rep.Rows != 3 {
		t.Fatalf("%+v %v", rep, err)
	}
	rows := rowsJSON(t, readParquet(t, out))
	var order []string
	for _, r := range rows {
		ex := r["extra_info"].(map[string]any)
		order = append(order, ex["channel"].(string))
		if ex["iteration"] != float64(3) {
			t.Fatal(ex)
		}
	}
	if strings.Join(order, ",") != "frontier,uniform,adapr" {
		t.Fatalf("batch not in rank order: %v", order)
	}
	none := int32(9)
	if _, err := Verl(ctx, l, m, filepath.Join(t.TempDir(), "x.parquet"), VerlOptions{Batch: &none}); err == nil {
		t.Fatal("a missing iteration exported")
	}
	out = filepath.Join(t.TempDir(), "segments.parquet")
	if rep, err := Verl(ctx, l, m, out, VerlOptions{Segments: true}); err != nil || rep.Rows != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
	tbl := readParquet(t, out)
	if !sameShape(tbl.Schema(), SegmentsSchema) {
		t.Fatalf("%s", tbl.Schema())
	}
	srows := rowsJSON(t, tbl)
	if !reflect.DeepEqual(srows[0]["input_ids"], []any{1.0, 2.0, 3.0}) || !reflect.DeepEqual(srows[0]["loss_mask"], []any{0.0, 1.0, 1.0}) ||
		!reflect.DeepEqual(srows[0]["logprobs"], []any{0.0, -0.5, -0.25}) || srows[0]["advantage"] != 0.7 || srows[1]["group_id"] != "g1" ||
		srows[0]["has_logprobs"] != true || srows[1]["has_logprobs"] != false {
		t.Fatalf("%v", srows)
	}
}
