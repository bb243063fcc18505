package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

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

// textOnlyTypes are DuckDB's types of a text-only verl prompt file.
var textOnlyTypes = []string{
	"data_source VARCHAR",
	"prompt STRUCT(\"role\" VARCHAR, \"content\" VARCHAR)[]",
	"ability VARCHAR",
	"reward_model STRUCT(style VARCHAR, ground_truth VARCHAR)",
	"extra_info STRUCT(split VARCHAR, \"index\" BIGINT, task_id VARCHAR, \"domain\" VARCHAR, app VARCHAR, instruction VARCHAR, setup VARCHAR, feasible BOOLEAN, \"source\" VARCHAR, origin VARCHAR)",
}

func TestVerlPool(t *testing.T) {
	ctx := context.Background()
	l, m := sampleLake(t)
	out := filepath.Join(t.TempDir(), "pool.parquet")
	rep, err := Verl(ctx, l, m, out, VerlOptions{TextOnly: true})
	if err != nil || rep.Rows != 183 || rep.Shape != "pool" {
		t.Fatalf("%+v %v", rep, err)
	}
	db := duck(t)
	checkTypes(t, db, out, textOnlyTypes...)
	tasks, _ := lake.ReadTable(ctx, l, m, schemas.Tasks)
	byID := map[string]schemas.Task{}
	for _, task := range tasks {
		byID[task.TaskID] = task
	}
	abilities := map[string]bool{}
	for i, r := range parquetRows(t, db, out) {
		ex := r["extra_info"].(map[string]any)
		task := byID[ex["task_id"].(string)]
		prompt := r["prompt"].([]any)
		msg := prompt[0].(map[string]any)
		rm := r["reward_model"].(map[string]any)
		if len(prompt) != 1 || msg["role"] != "user" || msg["content"] != task.Instruction || r["data_source"] != "cualake/"+task.Domain ||
			rm["style"] != "rule" || rm["ground_truth"] != task.Judge || ex["index"] != int64(i) || ex["feasible"] != task.Feasible {
			t.Fatalf("row %d: %v", i, r)
		}
		if task.TaskID == "syn-0001" && ex["split"] != "heldout" || task.TaskID != "syn-0001" && ex["split"] != "train" {
			t.Fatalf("row %d split %v", i, ex["split"])
		}
		abilities[r["ability"].(string)] = true
		if app := ex["app"].(string); app != NormalizeName(app) {
			t.Fatalf("row %d: app %q is not normalised", i, app)
		}
	}
	// One spelling per domain: OSWorld's related_apps say both
	// "libreoffice calc" and "libreoffice_calc", and "vscode" for vs_code.
	want := map[string]bool{"chrome": true, "gimp": true, "libreoffice_calc": true, "os": true, "thunderbird": true, "vs_code": true}
	if !reflect.DeepEqual(abilities, want) {
		t.Fatalf("abilities %v, want %v", abilities, want)
	}
	// Deterministic: the same snapshot gives the same bytes.
	out2 := filepath.Join(t.TempDir(), "again.parquet")
	if _, err := Verl(ctx, l, m, out2, VerlOptions{TextOnly: true}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if !bytes.Equal(a, b) {
		t.Fatal("two exports of one snapshot differ")
	}
	// With images (the default), OSWorld tasks without rollouts have no
	// screenshot: an error naming them, and no file.
	out3 := filepath.Join(t.TempDir(), "mm.parquet")
	if _, err := Verl(ctx, l, m, out3, VerlOptions{}); !errors.Is(err, ErrNoImage) || !strings.Contains(err.Error(), "183 task(s)") {
		t.Fatalf("multimodal export of unrendered tasks: %v", err)
	}
	if _, err := os.Stat(out3); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed export left %s: %v", out3, err)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{"libreoffice calc": "libreoffice_calc", "libreoffice_calc": "libreoffice_calc",
		"LibreOffice Calc": "libreoffice_calc", "vscode": "vs_code", "VS Code": "vs_code", "  Files ": "files", "": ""} {
		if got := NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVerlBatch(t *testing.T) {
	ctx := context.Background()
	l, _ := sampleLake(t)
	tx, _ := l.Begin(ctx, "")
	picks := []schemas.Batch{
		{Iteration: 3, Rank: 1, TaskID: "syn-0001", Sampler: "frontier", Channel: "uniform", Weight: 0.5},
		{Iteration: 3, Rank: 0, TaskID: "bb5e4c0d-f964-439c-97b6-bdb9747de3f4", Sampler: "frontier", Channel: "frontier", Weight: 0.9},
		{Iteration: 3, Rank: 2, TaskID: "syn-0001", Sampler: "frontier", Channel: "adapr", Weight: 0.25},
		{Iteration: 4, Rank: 0, TaskID: "syn-0002", Sampler: "frontier", Channel: "ics", Weight: 1},
	}
	if err := lake.AppendTable(ctx, tx, schemas.Batches, picks); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "sample"})
	if err != nil {
		t.Fatal(err)
	}
	it := int32(3)
	out := filepath.Join(t.TempDir(), "batch.parquet")
	if rep, err := Verl(ctx, l, m, out, VerlOptions{Batch: &it, TextOnly: true}); err != nil || rep.Rows != 3 {
		t.Fatalf("%+v %v", rep, err)
	}
	db := duck(t)
	var order []string
	for _, r := range parquetRows(t, db, out) {
		ex := r["extra_info"].(map[string]any)
		order = append(order, ex["channel"].(string))
		if ex["iteration"] != int32(3) {
			t.Fatal(ex)
		}
	}
	if strings.Join(order, ",") != "frontier,uniform,adapr" {
		t.Fatalf("batch not in rank order: %v", order)
	}
	none := int32(9)
	if _, err := Verl(ctx, l, m, filepath.Join(t.TempDir(), "x.parquet"), VerlOptions{Batch: &none, TextOnly: true}); err == nil ||
		!strings.Contains(err.Error(), "iteration 9") {
		t.Fatalf("a missing iteration: %v", err)
	}
	// A snapshot without the needed table: an error naming it.
	m0, _ := l.At(ctx, m.Parent)
	if _, err := Verl(ctx, l, m0, filepath.Join(t.TempDir(), "x.parquet"), VerlOptions{Batch: &it, TextOnly: true}); err == nil ||
		!strings.Contains(err.Error(), "no batches table") {
		t.Fatalf("batch export without a batches table: %v", err)
	}
	if _, err := Verl(ctx, l, m0, filepath.Join(t.TempDir(), "x.parquet"), VerlOptions{Segments: true}); err == nil ||
		!strings.Contains(err.Error(), "no segments table") {
		t.Fatalf("segments export without a segments table: %v", err)
	}
}
