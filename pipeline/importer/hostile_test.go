package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/importer/internal/fixture"
	"github.com/cualake/cualake/pipeline/importer/internal/testenv"
	"github.com/cualake/cualake/pipeline/lake"
)

// hangLimit bounds an import that must not hang; it is a liveness guard.
const hangLimit = 30 * time.Second

// runGuarded is Run under a hang guard.
func runGuarded(t *testing.T, l *lake.Lake, opts Options) (*Report, error) {
	t.Helper()
	var rep *Report
	var err error
	testenv.Finishes(t, hangLimit, func() { rep, err = Run(context.Background(), l, opts) })
	return rep, err
}

// wantReject checks that the import was refused for exactly one bad record
// at file:line in field, with a reason holding every one of want.
func wantReject(t *testing.T, rep *Report, err error, file string, line int, field string, want ...string) {
	t.Helper()
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("import: %v (want %v); report %+v", err, ErrRejected, rep)
	}
	if rep.Rejected != 1 || len(rep.Rejects) != 1 {
		t.Fatalf("want one reject, got %d: %+v", rep.Rejected, rep.Rejects)
	}
	r := rep.Rejects[0]
	if r.File != file || r.Line != line || r.Field != field {
		t.Fatalf("reject %s:%d field %s, want %s:%d field %s (%s)", r.File, r.Line, r.Field, file, line, field, r.Reason)
	}
	for _, w := range want {
		if !strings.Contains(r.Reason, w) {
			t.Errorf("reason %q lacks %q", r.Reason, w)
		}
	}
}

// writeJSONL writes lines (JSON values) as a JSONL file in dir.
func writeJSONL(t *testing.T, dir, name string, lines ...map[string]any) string {
	t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// shotLine is a one-step trajectory whose step names screenshot.
func shotLine(id, screenshot string) map[string]any {
	return map[string]any{"trajectory_id": id, "task_id": "task-1", "domain": "chrome", "reward": 1,
		"steps": []map[string]any{{"action": "DONE", "screenshot": screenshot}}}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestJSONLScreenshotMustBeARegularFile(t *testing.T) {
	dir := t.TempDir()
	mkfifo(t, filepath.Join(dir, "fifo.png"))
	if err := os.Mkdir(filepath.Join(dir, "folder.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, shot, want string }{
		{"dev-zero", "/dev/zero", "device"},
		{"fifo", "fifo.png", "FIFO"},
		{"directory", "folder.png", "directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := writeJSONL(t, dir, c.name+".jsonl", shotLine("good", ""), shotLine("bad", c.shot))
			rep, err := runGuarded(t, newLake(t), Options{Kind: KindJSONL, Paths: []string{f}})
			wantReject(t, rep, err, f, 2, "steps[0].screenshot", c.shot, c.want, "regular file")
		})
	}
}

func TestJSONLScreenshotSizeCap(t *testing.T) {
	dir := t.TempDir()
	png, err := fixture.Screenshot(64, 48, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shot.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	f := writeJSONL(t, dir, "a.jsonl", shotLine("t", "shot.png"))
	rep, err := runGuarded(t, newLake(t), Options{Kind: KindJSONL, Paths: []string{f}, MaxFileBytes: int64(len(png) - 1)})
	wantReject(t, rep, err, f, 1, "steps[0].screenshot", "shot.png", "cap", "--max-file-bytes")
	// At the cap exactly it is read.
	if rep := run(t, newLake(t), Options{Kind: KindJSONL, Paths: []string{f}, MaxFileBytes: int64(len(png))}); rep.Trajectories.Added != 1 {
		t.Fatalf("%+v", rep)
	}

	// The default cap is 64 MiB: one byte more is refused before it is read
	// (a sparse file, so the test writes nothing).
	big := filepath.Join(dir, "big.png")
	if err := os.WriteFile(big, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 64<<20+1); err != nil {
		t.Fatal(err)
	}
	f = writeJSONL(t, dir, "big.jsonl", shotLine("t", "big.png"))
	rep, err = runGuarded(t, newLake(t), Options{Kind: KindJSONL, Paths: []string{f}})
	wantReject(t, rep, err, f, 1, "steps[0].screenshot", "big.png", "67108864")

	if _, err := Run(context.Background(), newLake(t), Options{Kind: KindJSONL, Paths: []string{f}, MaxFileBytes: -1}); err == nil || !strings.Contains(err.Error(), "--max-file-bytes") {
		t.Fatalf("a negative cap: %v", err)
	}
}

func TestJSONLCorruptPNG(t *testing.T) {
	dir := t.TempDir()
	png, err := fixture.Screenshot(64, 48, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Flip one byte inside the image data: the header and the IEND
	// trailer are intact, only a full check can tell.
	i := bytes.Index(png, []byte("IDAT"))
	if i < 0 {
		t.Fatal("no IDAT chunk")
	}
	png[i+8] ^= 0x55
	if err := os.WriteFile(filepath.Join(dir, "corrupt.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	f := writeJSONL(t, dir, "a.jsonl", shotLine("t", "corrupt.png"))
	rep, err := runGuarded(t, newLake(t), Options{Kind: KindJSONL, Paths: []string{f}})
	wantReject(t, rep, err, f, 1, "steps[0].screenshot", "corrupt.png", "CRC")
}

func TestJSONLNamesArePathComponents(t *testing.T) {
	dir := t.TempDir()
	line := func(k string, v any) map[string]any {
		l := map[string]any{"trajectory_id": "t", "task_id": "task-1", "domain": "chrome", "reward": 1, "steps": []any{}}
		l[k] = v
		return l
	}
	for i, c := range []struct {
		field string
		value any
	}{
		{"domain", "../x"}, {"domain", "a/b"}, {"domain", ""}, {"domain", ".."}, {"domain", "a\x00b"}, {"domain", "a\nb"},
		{"domain", `a\b`}, {"domain", strings.Repeat("d", 300)},
		{"task_id", "../../etc"}, {"task_id", "a/b"},
		{"trajectory_id", ".."}, {"trajectory_id", "x/y"},
	} {
		t.Run(fmt.Sprintf("%s-%d", c.field, i), func(t *testing.T) {
			f := writeJSONL(t, dir, fmt.Sprintf("names-%d.jsonl", i), line(c.field, c.value))
			rep, err := runGuarded(t, newLake(t), Options{Kind: KindJSONL, Paths: []string{f}})
			wantReject(t, rep, err, f, 1, c.field)
		})
	}
	// An embedded task's domain is checked as well (it becomes a folder
	// of the export layout).
	task := json.RawMessage(`{"id": "task-2", "instruction": "x", "evaluator": {"func": "infeasible"}}`)
	l := line("domain", "../up")
	l["task"], l["task_id"] = task, "task-2"
	f := writeJSONL(t, dir, "task.jsonl", l)
	rep, err := runGuarded(t, newLake(t), Options{Kind: KindJSONL, Paths: []string{f}})
	wantReject(t, rep, err, f, 1, "domain")
}

func TestJSONLDuplicates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	traj := func(id string, reward float64) map[string]any {
		return map[string]any{"trajectory_id": id, "task_id": "task-1", "domain": "chrome", "reward": reward,
			"steps": []map[string]any{{"action": "pyautogui.click(10, 20)"}, {"action": "DONE"}}}
	}

	// Within one file and across files: the later record names the first.
	a := writeJSONL(t, dir, "a.jsonl", traj("t1", 1), traj("t2", 0), traj("t1", 1), traj("t1", 0.5))
	rep, err := runGuarded(t, newLake(t), Options{Kind: KindJSONL, Paths: []string{a}})
	wantReject(t, rep, err, a, 4, "trajectory_id", "t1", a+":1", "different content")
	if rep.Trajectories.Added != 2 || rep.Trajectories.Present != 1 {
		t.Fatalf("identical duplicate not present: %+v", rep.Trajectories)
	}
	b := writeJSONL(t, dir, "b.jsonl", traj("t2", 0), traj("t2", 1))
	rep, err = runGuarded(t, newLake(t), Options{Kind: KindJSONL, Paths: []string{a, b}, Quarantine: true})
	if err != nil || rep.Rejected != 2 || rep.Trajectories.Present != 2 || rep.Trajectories.Added != 2 {
		t.Fatalf("%v %+v", err, rep)
	}
	if r := rep.Rejects[1]; r.File != b || r.Line != 2 || !strings.Contains(r.Reason, a+":2") {
		t.Fatalf("%+v", r)
	}

	// Against the parent snapshot: identical is present, different is a
	// reject naming the snapshot that holds it.
	l := newLake(t)
	first := run(t, l, Options{Kind: KindJSONL, Paths: []string{writeJSONL(t, dir, "first.jsonl", traj("t1", 1), traj("t2", 0))}})
	again := writeJSONL(t, dir, "again.jsonl", traj("t2", 0), traj("t1", 1))
	if rep := run(t, l, Options{Kind: KindJSONL, Paths: []string{again}}); rep.Committed || rep.Trajectories.Present != 2 || rep.Rejected != 0 {
		t.Fatalf("identical re-import: %+v", rep)
	}
	changed := traj("t1", 1)
	changed["steps"] = []map[string]any{{"action": "pyautogui.click(10, 21)"}, {"action": "DONE"}} // same row, other steps
	other := writeJSONL(t, dir, "other.jsonl", traj("t2", 0), changed)
	rep, err = runGuarded(t, l, Options{Kind: KindJSONL, Paths: []string{other}})
	wantReject(t, rep, err, other, 2, "trajectory_id", "t1", "snapshot "+first.Snapshot[:12], "different content")
	if m, _ := l.At(ctx, ""); m.ID != first.Snapshot {
		t.Fatal("a refused import committed")
	}
}

func TestJSONLConflictingTasks(t *testing.T) {
	dir := t.TempDir()
	withTask := func(traj, instruction string) map[string]any {
		task := json.RawMessage(`{"id": "task-9", "instruction": "` + instruction + `", "evaluator": {"func": "infeasible"}}`)
		return map[string]any{"trajectory_id": traj, "domain": "os", "reward": 0, "steps": []any{}, "task": task}
	}
	f := writeJSONL(t, dir, "a.jsonl", withTask("t1", "Rename it."), withTask("t2", "Rename it."), withTask("t3", "Delete it."))
	rep, err := runGuarded(t, newLake(t), Options{Kind: KindJSONL, Paths: []string{f}})
	wantReject(t, rep, err, f, 3, "task", "task-9", f+":1", "different content")
	if rep.Tasks.Added != 1 || rep.Tasks.Present != 1 || rep.Trajectories.Added != 2 {
		t.Fatalf("%+v", rep)
	}
}

// episodeTree writes one OSWorld episode folder under a results root and
// returns the root and the episode folder.
func episodeTree(t *testing.T, domain string) (root, ep string) {
	t.Helper()
	root = t.TempDir()
	ep = filepath.Join(root, "pyautogui", "screenshot", "model", domain, "ex-1")
	if err := os.MkdirAll(ep, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := fixture.Screenshot(640, 400, 3)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"traj.jsonl": `{"step_num": 1, "action_timestamp": "20240418@120301", "action": "DONE", "response": "r", "reward": 0, "done": true, "screenshot_file": "step_1.png"}` + "\n",
		"result.txt": "1.0\n", "runtime.log": "log\n", "step_1.png": string(png),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(ep, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, ep
}

func TestResultsFilesMustBeRegular(t *testing.T) {
	const rel = "pyautogui/screenshot/model/chrome/ex-1/"
	for _, c := range []struct {
		name, file, field, want string
		line                    int
		make                    func(t *testing.T, p string)
	}{
		{"fifo screenshot", "step_1.png", "screenshot_file", "FIFO", 1, mkfifo},
		{"dev-zero screenshot", "step_1.png", "screenshot_file", "device", 1, func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory screenshot", "step_1.png", "screenshot_file", "directory", 1, func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"fifo runtime.log", "runtime.log", "file", "FIFO", 0, mkfifo},
		{"fifo result.txt", "result.txt", "file", "FIFO", 0, mkfifo},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, ep := episodeTree(t, "chrome")
			p := filepath.Join(ep, c.file)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			c.make(t, p)
			rep, err := runGuarded(t, newLake(t), Options{Kind: KindOSWorldResults, Paths: []string{root}})
			file := rel + "traj.jsonl"
			if c.field == "file" {
				file = rel + c.file
			}
			wantReject(t, rep, err, file, c.line, c.field, c.want, "regular file")
		})
	}
}

func TestResultsScreenshotCapAndCorruption(t *testing.T) {
	const rel = "pyautogui/screenshot/model/chrome/ex-1/"
	root, ep := episodeTree(t, "chrome")
	st, err := os.Stat(filepath.Join(ep, "step_1.png"))
	if err != nil || st.Size() < 400 {
		t.Fatalf("want a screenshot larger than traj.jsonl: %v %v", st, err)
	}
	rep, err := runGuarded(t, newLake(t), Options{Kind: KindOSWorldResults, Paths: []string{root}, MaxFileBytes: st.Size() - 1})
	wantReject(t, rep, err, rel+"traj.jsonl", 1, "screenshot_file", "step_1.png", "cap")

	b, err := os.ReadFile(filepath.Join(ep, "step_1.png"))
	if err != nil {
		t.Fatal(err)
	}
	b[bytes.Index(b, []byte("IDAT"))+8] ^= 0x55
	if err := os.WriteFile(filepath.Join(ep, "step_1.png"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = runGuarded(t, newLake(t), Options{Kind: KindOSWorldResults, Paths: []string{root}})
	wantReject(t, rep, err, rel+"traj.jsonl", 1, "screenshot_file", "step_1.png", "CRC")
}

func TestResultsDomainFolderIsChecked(t *testing.T) {
	root, _ := episodeTree(t, "chr\x01ome")
	rep, err := runGuarded(t, newLake(t), Options{Kind: KindOSWorldResults, Paths: []string{root}})
	wantReject(t, rep, err, "pyautogui/screenshot/model/chr\x01ome/ex-1", 0, "domain", "control character")
	// The good tree imports.
	root, _ = episodeTree(t, "chrome")
	if rep := run(t, newLake(t), Options{Kind: KindOSWorldResults, Paths: []string{root}}); rep.Trajectories.Added != 1 || rep.Steps != 1 {
		t.Fatalf("%+v", rep)
	}
}
