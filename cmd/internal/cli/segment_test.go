package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
)

// pngBlob is a real w x h PNG screenshot.
func pngBlob(t *testing.T, w, h int, shade uint8) schemas.Blob {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = shade + uint8(i%7)
	}
	img.SetGray(0, 0, color.Gray{Y: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	return schemas.Blob{Hash: schemas.HashBytes(b), Mime: "image/png", Size: int64(len(b)), Width: int32(w), Height: int32(h), Bytes: b}
}

// segmentFixture commits tasks, 6 trajectories of 0..7 turns with recorded
// ids and log-probabilities (one trajectory imported, text only), steps and
// PNG screenshots of two sizes (64x64: 4 pad tokens, 128x96: 12).
func segmentFixture(t *testing.T, dir string, tok tokenizer.Encoder, bad bool) (string, map[string][]int32) {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	imEnd, _ := tok.TokenID("<|im_end|>")
	blobs := []schemas.Blob{pngBlob(t, 64, 64, 10), pngBlob(t, 128, 96, 90)}
	tasks := []schemas.Task{{TaskID: "t1", Domain: "files", Instruction: "Rename notes.txt to todo.txt", Setup: "[]", Judge: "{}", Source: "seed"}}
	var trajs []schemas.Trajectory
	var steps []schemas.Step
	trained := map[string][]int32{}
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("r%02d", i)
		turns := []int{7, 3, 0, 5, 1, 6}[i]
		trajs = append(trajs, schemas.Trajectory{TrajectoryID: id, TaskID: "t1", GroupID: "g1", Policy: "checkpoint", PolicyVersion: 2,
			Steps: int32(turns), Reward: float64(i % 2), Outcome: []string{"failure", "success"}[i%2], Source: "rollout"})
		for s := 0; s < turns; s++ {
			x, y := int32(10*s), int32(20*s)
			text := fmt.Sprintf("The file list is open. I click entry %d.\nAction: click %d %d", s, x, y)
			st := schemas.Step{TrajectoryID: id, Step: int32(s), ActionKind: "click", X: &x, Y: &y, Response: text,
				Observation: blobs[(i+s)%2].Hash}
			if i != 5 {
				st.ResponseIDs = append(tok.Encode(text), imEnd)
				st.Logprobs = make([]float32, len(st.ResponseIDs))
				for k := range st.Logprobs {
					st.Logprobs[k] = -0.125 * float32(k%5)
				}
				trained[id] = append(trained[id], st.ResponseIDs...)
			} else {
				trained[id] = append(trained[id], append(tok.Encode(text), imEnd)...)
			}
			if bad && i == 3 && s == 2 {
				st.Observation = strings.Repeat("f", 64)
			}
			steps = append(steps, st)
		}
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{lake.ReplaceTable(ctx, tx, schemas.Tasks, tasks), lake.ReplaceTable(ctx, tx, schemas.Blobs, blobs),
		lake.ReplaceTable(ctx, tx, schemas.Trajectories, trajs), lake.ReplaceTable(ctx, tx, schemas.Steps, steps)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"})
	if err != nil {
		t.Fatal(err)
	}
	return m.ID, trained
}

type segmentOut struct {
	Snapshot string `json:"snapshot"`
	Rejects  int    `json:"rejects"`
	Summary  struct {
		Items       int64 `json:"items"`
		Tokens      int64 `json:"tokens"`
		Trainable   int64 `json:"trainable_tokens"`
		MaxImages   int   `json:"max_images_per_item"`
		Trajs       int   `json:"trajectories"`
		Empty       int   `json:"empty_trajectories"`
		NoLogprobs  int64 `json:"items_without_logprobs"`
		ImageTokens int64 `json:"image_tokens"`
		Expected    struct {
			Items      int64 `json:"items"`
			Trajectory int64 `json:"trajectory_items"`
			Step       int64 `json:"step_items"`
			Window     int64 `json:"window_items"`
		} `json:"expected"`
	} `json:"summary"`
}

func TestSegmentCommandEndToEnd(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Skipf("Qwen tokenizer not installed (scripts/fetch-tokenizer.sh): %v", err)
	}
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	input, trained := segmentFixture(t, dir, tok, false)
	turns := 7 + 3 + 5 + 1 + 6
	for _, tc := range []struct {
		args  []string
		items int64
	}{
		{[]string{"--mode", "trajectory"}, 5},
		{[]string{"--mode", "step", "--window", "2"}, int64(turns)},
		// 1 + ceil(max(0, T-4)/2) for T = 7, 3, 5, 1, 6: 3+1+2+1+2.
		{[]string{"--mode", "window", "--k", "2", "--delta", "2"}, 9},
	} {
		// Each run builds on the head (the previous run's snapshot) and
		// replaces its segments.
		out, err := run(t, append([]string{"segment", "--json", "--workers", "3"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, out)
		}
		var res segmentOut
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, out)
		}
		s := res.Summary
		if s.Items != tc.items || s.Expected.Items != tc.items || s.Trajs != 5 || s.Empty != 1 || s.NoLogprobs == 0 ||
			s.Expected.Trajectory != 5 || s.Expected.Step != int64(turns) {
			t.Fatalf("%v: summary %+v", tc.args, s)
		}
		if tc.args[1] == "window" && s.MaxImages > 4 {
			t.Fatalf("window item with %d screenshots", s.MaxImages)
		}
		// Query the committed table: counts, and the trained tokens of each
		// trajectory in item order are its responses.
		q, err := run(t, "query", "--at", res.Snapshot, "--format", "csv",
			"select count(*) as n, sum(tokens) as tok, sum(trainable_tokens) as tr, bool_and(mode = '"+tc.args[1]+"') as m from segments")
		if want := fmt.Sprintf("n,tok,tr,m\n%d,%d,%d,true\n", s.Items, s.Tokens, s.Trainable); err != nil || q != want {
			t.Fatalf("%v: query %q %v, want %q", tc.args, q, err, want)
		}
		ctx := context.Background()
		l, _ := lake.OpenDir(ctx, dir, false)
		m, _ := l.At(ctx, res.Snapshot)
		rows, err := lake.ReadTable(ctx, l, m, schemas.Segments)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]int32{}
		for _, r := range rows {
			if r.Tokenizer == "" || !strings.HasPrefix(r.Tokenizer, "tokenizer.json@sha256:") {
				t.Fatalf("tokenizer column %q", r.Tokenizer)
			}
			for i, mk := range r.LossMask {
				if mk == 1 {
					got[r.TrajectoryID] = append(got[r.TrajectoryID], r.InputIDs[i])
				}
			}
		}
		for id, want := range trained {
			if fmt.Sprint(got[id]) != fmt.Sprint(want) {
				t.Fatalf("%v %s: trained tokens differ from the responses", tc.args, id)
			}
		}
	}

	// Same input and parameters, other worker counts: the very same snapshot.
	head, _ := run(t, "lake", "log", "--limit", "1", "--json")
	var log []map[string]any
	if err := json.Unmarshal([]byte(head), &log); err != nil || len(log) != 1 {
		t.Fatalf("log: %v %s", err, head)
	}
	parent := log[0]["id"].(string)
	var ids []string
	for _, w := range []string{"1", "4"} {
		out, err := run(t, "segment", "--in", parent, "--mode", "window", "--workers", w, "--json")
		var res segmentOut
		if err != nil || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("workers %s: %v %s", w, err, out)
		}
		ids = append(ids, res.Snapshot)
	}
	if ids[0] != ids[1] {
		t.Fatalf("workers 1 and 4 committed different snapshots %s %s", ids[0], ids[1])
	}
	out, err := run(t, "lake", "show", "--json", ids[0])
	if err != nil || !strings.Contains(out, `"stage": "segment"`) || !strings.Contains(out, `"sha256"`) || !strings.Contains(out, `"mode": "window"`) || !strings.Contains(out, `"patch_size": 16`) {
		t.Fatalf("commit params: %v\n%s", err, out)
	}

	// Usage errors exit 2; a missing tokenizer file is named.
	for _, args := range [][]string{{"--k", "0"}, {"--delta", "0"}, {"--mode", "steps"}} {
		_, err := run(t, append([]string{"segment", "--in", input}, args...)...)
		if ExitCode(err) != ExitUsage {
			t.Errorf("%v: %v (code %d), want a usage error", args, err, ExitCode(err))
		}
	}
	_, err = run(t, "segment", "--in", input, "--tokenizer", "/no/such/tokenizer.json")
	if err == nil || !strings.Contains(err.Error(), "/no/such/tokenizer.json") {
		t.Errorf("missing tokenizer: %v", err)
	}
}

func TestSegmentCommandBadData(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Skipf("Qwen tokenizer not installed: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	input, _ := segmentFixture(t, dir, tok, true)
	_, err = run(t, "segment", "--in", input, "--mode", "step")
	if err == nil || ExitCode(err) != ExitFailure || !strings.Contains(err.Error(), `trajectory "r03" step 2: observation: screenshot blob ffff`) {
		t.Fatalf("want an error naming r03 step 2, got %v", err)
	}
	// Fixed image tokens need no screenshots at all.
	if _, err := run(t, "segment", "--in", input, "--mode", "step", "--image-tokens", "9"); err != nil {
		t.Fatalf("--image-tokens: %v", err)
	}
	out, err := run(t, "segment", "--mode", "step", "--quarantine", "--json")
	var res segmentOut
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.Rejects != 1 || res.Summary.Trajs != 4 {
		t.Fatalf("--quarantine: %v %s", err, out)
	}
	q, err := run(t, "query", "--at", res.Snapshot, "--format", "csv", "select stage, source, line, field from rejects")
	if err != nil || q != "stage,source,line,field\nsegment,trajectories/r03,2,observation\n" {
		t.Fatalf("rejects: %q %v", q, err)
	}
}

// TestSegmentShardedEqualsUnsharded: `segment --shard I/N` for every I,
// then `lake merge`, commits the snapshot an unsharded run commits, for
// N = 1, 2, 3, 7 (some shards of 7 own no trajectory), with a quarantined
// trajectory in the rejects table.
func TestSegmentShardedEqualsUnsharded(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Skipf("Qwen tokenizer not installed (scripts/fetch-tokenizer.sh): %v", err)
	}
	args := []string{"--mode", "window", "--k", "2", "--delta", "2", "--quarantine", "--workers", "2"}
	ref := filepath.Join(t.TempDir(), "ref")
	input, _ := segmentFixture(t, ref, tok, true)
	want := runSnapshot(t, append([]string{"segment", "--lake", ref, "--in", input, "--json"}, args...)...)
	if q, err := run(t, "query", "--lake", ref, "--format", "csv", "select source from rejects"); err != nil || q != "source\ntrajectories/r03\n" {
		t.Fatalf("rejects: %q %v", q, err)
	}
	for _, n := range []int{1, 2, 3, 7} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("n", n))
		if in, _ := segmentFixture(t, dir, tok, true); in != input {
			t.Fatalf("fixture inputs differ: %s %s", in, input)
		}
		if got := shardedSegment(t, dir, input, n, args...); got != want {
			t.Fatalf("N=%d: merged snapshot %s, unsharded %s", n, got, want)
		}
		if out, err := run(t, "lake", "verify", "--lake", dir); err != nil {
			t.Fatalf("N=%d: verify: %v\n%s", n, err, out)
		}
	}
	if _, err := run(t, "segment", "--lake", ref, "--in", input, "--shard", "3/3"); ExitCode(err) != ExitUsage {
		t.Fatalf("--shard 3/3: %v", err)
	}
}

// shardedSegment runs the N shards of a segment run on input (in reverse
// order) and merges them.
func shardedSegment(t *testing.T, lakeURL, input string, n int, args ...string) string {
	t.Helper()
	for i := n - 1; i >= 0; i-- {
		a := append([]string{"segment", "--lake", lakeURL, "--in", input, "--json", "--shard", fmt.Sprintf("%d/%d", i, n)}, args...)
		out, err := run(t, a...)
		if err != nil || !strings.Contains(out, `"fragment"`) || !strings.Contains(out, `"summary"`) {
			t.Fatalf("shard %d/%d: %v\n%s", i, n, err, out)
		}
	}
	return runSnapshot(t, "lake", "merge", "--lake", lakeURL, "--stage", "segment", "--in", input, "--shards", fmt.Sprint(n), "--clean", "--json")
}
