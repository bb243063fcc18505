package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/importer/internal/fixture"
	"github.com/cualake/cualake/pipeline/importer/internal/testenv"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

//go:generate go run ./internal/fixture/gen testdata

func newLake(t testing.TB) *lake.Lake {
	t.Helper()
	l, err := lake.OpenDir(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return time.Unix(0, 0) }
	return l
}

func run(t testing.TB, l *lake.Lake, opts Options) *Report {
	t.Helper()
	rep, err := Run(context.Background(), l, opts)
	if err != nil {
		t.Fatalf("import %s: %v", opts.Kind, err)
	}
	return rep
}

func head(t testing.TB, l *lake.Lake) *lake.Manifest {
	t.Helper()
	m, err := l.At(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestImportSampleTasks(t *testing.T) {
	ctx := context.Background()
	dir := testenv.OSWorldSample(t)
	l := newLake(t)
	rep := run(t, l, Options{Kind: KindOSWorldTasks, Paths: []string{dir}})
	if !rep.Committed || rep.Tasks.Added != 181 || rep.Tasks.Present != 0 || rep.Rejected != 0 {
		t.Fatalf("%+v", rep)
	}
	m := head(t, l)
	var p map[string]any
	json.Unmarshal(m.Params, &p)
	if m.Stage != "import" || p["kind"] != "osworld-tasks" || p["path"] != dir || p["index"] != "" || p["quarantine"] != false {
		t.Fatalf("manifest: stage %s params %s", m.Stage, m.Params)
	}
	tasks, err := lake.ReadTable(ctx, l, m, schemas.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, task := range tasks {
		per[task.Domain]++
	}
	if !reflect.DeepEqual(per, map[string]int{"chrome": 46, "gimp": 26, "libreoffice_calc": 47, "os": 24, "thunderbird": 15, "vs_code": 23}) {
		t.Fatalf("per domain: %v", per)
	}
	// Importing again adds nothing and commits nothing.
	again := run(t, l, Options{Kind: KindOSWorldTasks, Paths: []string{dir}})
	if again.Committed || again.Tasks.Present != 181 || again.Tasks.Added != 0 || again.Snapshot != m.ID {
		t.Fatalf("re-import: %+v", again)
	}
	// Same input, same snapshot id.
	other := newLake(t)
	if rep2 := run(t, other, Options{Kind: KindOSWorldTasks, Paths: []string{dir}}); rep2.Snapshot != rep.Snapshot {
		t.Fatalf("same input gave snapshots %s and %s", rep.Snapshot, rep2.Snapshot)
	}
}

func TestImportIndexThenAll(t *testing.T) {
	dir := testenv.OSWorldSample(t)
	l := newLake(t)
	rep := run(t, l, Options{Kind: KindOSWorldTasks, Paths: []string{dir}, Index: "test_small.json"})
	if rep.Tasks.Added != 16 || len(rep.Missing) != 0 {
		t.Fatalf("%+v", rep)
	}
	rep = run(t, l, Options{Kind: KindOSWorldTasks, Paths: []string{dir}})
	if rep.Tasks.Added != 165 || rep.Tasks.Present != 16 {
		t.Fatalf("%+v", rep)
	}
	if n := head(t, l).Tables["tasks"].Rows; n != 181 {
		t.Fatalf("%d tasks", n)
	}
}

func TestImportResults(t *testing.T) {
	ctx := context.Background()
	tree := filepath.Join(testenv.Testdata(t), "osworld-results")
	l := newLake(t)
	rep := run(t, l, Options{Kind: KindOSWorldResults, Paths: []string{tree}, Workers: 4})
	if !rep.Committed || rep.Trajectories.Added != 6 || rep.Steps != 19 || rep.Blobs.Present == 0 || rep.Rejected != 0 {
		t.Fatalf("%+v", rep)
	}
	m := head(t, l)
	steps, err := lake.ReadTable(ctx, l, m, schemas.Steps)
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := lake.BlobHashes(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.Observation != "" && !hashes[s.Observation] {
			t.Fatalf("step %s/%d observes a blob the lake lacks", s.TrajectoryID, s.Step)
		}
	}
	// A screenshot is viewable by hash: the lake gives back the file's bytes.
	shot := filepath.Join(tree, "pyautogui", "screenshot", "gpt-4o", "chrome", fixture.ChromeTask)
	files, _ := filepath.Glob(filepath.Join(shot, "step_1_*.png"))
	want, _ := os.ReadFile(files[0])
	b, err := lake.Blob(ctx, l, m, schemas.HashBytes(want))
	if err != nil || !bytes.Equal(b.Bytes, want) || b.Mime != "image/png" || b.Width != 1920 || b.Height != 1080 {
		t.Fatalf("blob: %v", err)
	}
	// Nothing new the second time.
	again := run(t, l, Options{Kind: KindOSWorldResults, Paths: []string{tree}})
	if again.Committed || again.Trajectories.Present != 6 || again.Trajectories.Added != 0 {
		t.Fatalf("re-import: %+v", again)
	}
	// Worker count and chunk size do not change the rows, and with the same
	// options the snapshot id is the same in another lake.
	small := newLake(t)
	rep2 := run(t, small, Options{Kind: KindOSWorldResults, Paths: []string{tree}, Workers: 1, ChunkRows: 4})
	m2 := head(t, small)
	if len(m2.Tables["steps"].Files) < 3 || len(m2.Tables["blobs"].Files) < 3 {
		t.Fatalf("small chunks did not split the files: %+v", m2.Tables["steps"])
	}
	steps2, _ := lake.ReadTable(ctx, small, m2, schemas.Steps)
	schemas.Steps.Sort(steps2)
	if !reflect.DeepEqual(steps, steps2) {
		t.Fatal("chunked import gave different steps")
	}
	third := newLake(t)
	if rep3 := run(t, third, Options{Kind: KindOSWorldResults, Paths: []string{tree}, Workers: 3, ChunkRows: 4}); rep3.Snapshot != rep2.Snapshot {
		t.Fatal("same input and options gave different snapshots")
	}
}

func TestBadInputFailsOrQuarantines(t *testing.T) {
	ctx := context.Background()
	bad := filepath.Join(testenv.Testdata(t), "osworld-results-bad")
	l := newLake(t)
	before := run(t, l, Options{Kind: KindOSWorldTasks, Paths: []string{testenv.OSWorldSample(t)}, Index: "test_small.json"}).Snapshot
	rep, err := Run(ctx, l, Options{Kind: KindOSWorldResults, Paths: []string{bad}})
	if !errors.Is(err, ErrRejected) || rep.Committed || rep.Rejected != 5 {
		t.Fatalf("want a failed import, got %v %+v", err, rep)
	}
	if !strings.Contains(err.Error(), "traj.jsonl:3 field screenshot_file") {
		t.Fatalf("error does not name file, line and field: %v", err)
	}
	if h, _ := l.Head(ctx); h != before {
		t.Fatal("a failed import moved the head")
	}
	rep = run(t, l, Options{Kind: KindOSWorldResults, Paths: []string{bad}, Quarantine: true})
	if !rep.Committed || rep.Trajectories.Added != 1 || rep.Quarantined != 5 {
		t.Fatalf("%+v", rep)
	}
	m := head(t, l)
	rejects, _ := lake.ReadTable(ctx, l, m, schemas.Rejects)
	fields := map[string]bool{}
	for _, r := range rejects {
		if r.Stage != "import" || r.Source == "" || r.Line == 0 || r.Raw == "" || r.Table == "" {
			t.Errorf("reject lacks where or what: %+v", r)
		}
		fields[r.Field] = true
	}
	if len(rejects) != 5 || !fields["json"] || !fields["step_num"] || !fields["screenshot_file"] || !fields["result"] {
		t.Fatalf("rejects: %+v", rejects)
	}
	if m.Tables["tasks"].Rows != 16 {
		t.Fatal("the parent's tasks were not carried over")
	}
	// Quarantining the same input again changes nothing.
	if again := run(t, l, Options{Kind: KindOSWorldResults, Paths: []string{bad}, Quarantine: true}); again.Committed || again.Quarantined != 0 {
		t.Fatalf("%+v", again)
	}
}

func TestImportJSONL(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(testenv.Testdata(t), "jsonl")
	l := newLake(t)
	rep := run(t, l, Options{Kind: KindJSONL, Paths: []string{filepath.Join(dir, "rollouts.jsonl")}})
	if rep.Tasks.Added != 1 || rep.Trajectories.Added != 3 || rep.Steps != 7 {
		t.Fatalf("%+v", rep)
	}
	var p map[string]any
	json.Unmarshal(head(t, l).Params, &p)
	if p["kind"] != "jsonl" {
		t.Fatalf("%v", p)
	}
	_, err := Run(ctx, l, Options{Kind: KindJSONL, Paths: []string{filepath.Join(dir, "bad.jsonl")}})
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "bad.jsonl:2 field json") {
		t.Fatalf("%v", err)
	}
	rep = run(t, l, Options{Kind: KindJSONL, Paths: []string{filepath.Join(dir, "rollouts.jsonl"), filepath.Join(dir, "bad.jsonl")}, Quarantine: true})
	if rep.Trajectories.Present != 3 || rep.Trajectories.Added != 1 || rep.Quarantined != 5 || rep.Tasks.Present != 1 {
		t.Fatalf("%+v", rep)
	}
	var p2 map[string]any
	json.Unmarshal(head(t, l).Params, &p2)
	if paths, _ := p2["path"].([]any); len(paths) != 2 {
		t.Fatalf("several paths are recorded as a list: %v", p2)
	}
}

func TestUsageErrors(t *testing.T) {
	l := newLake(t)
	for _, o := range []Options{
		{Kind: "csv", Paths: []string{"x"}},
		{Kind: KindOSWorldResults, Paths: []string{"a", "b"}},
		{Kind: KindJSONL, Paths: []string{"a"}, Index: "i.json"},
		{Kind: KindJSONL},
	} {
		if _, err := Run(context.Background(), l, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := Run(context.Background(), l, Options{Kind: KindOSWorldTasks, Paths: []string{t.TempDir()}}); err == nil || !strings.Contains(err.Error(), "examples/") {
		t.Fatalf("%v", err)
	}
}

// TestFixturesUpToDate proves the committed testdata is what the generator
// writes (run `go generate ./pipeline/importer` after changing it). PNGs are
// compared by pixels, since zlib output may change between Go releases.
func TestFixturesUpToDate(t *testing.T) {
	fresh := t.TempDir()
	if err := fixture.WriteAll(fresh); err != nil {
		t.Fatal(err)
	}
	committed := testenv.Testdata(t)
	var names []string
	err := filepath.WalkDir(fresh, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(fresh, p)
			names = append(names, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	for _, rel := range names {
		a, _ := os.ReadFile(filepath.Join(fresh, rel))
		b, err := os.ReadFile(filepath.Join(committed, rel))
		if err != nil {
			t.Errorf("%s: generated but not committed (run go generate ./pipeline/importer)", rel)
			continue
		}
		if strings.HasSuffix(rel, ".png") && !bytes.HasPrefix(b, []byte("<html>")) {
			ia, err1 := png.Decode(bytes.NewReader(a))
			ib, err2 := png.Decode(bytes.NewReader(b))
			if err1 != nil || err2 != nil || !reflect.DeepEqual(ia, ib) {
				t.Errorf("%s: pixels differ from the generator's", rel)
			}
			continue
		}
		// rollouts.jsonl embeds PNG bytes in base64: zlib again.
		if !bytes.Equal(a, b) && rel != filepath.Join("jsonl", "rollouts.jsonl") {
			t.Errorf("%s: differs from the generator's output", rel)
		}
	}
}
