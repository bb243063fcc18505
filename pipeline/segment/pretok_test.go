package segment

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cualake/cualake/pipeline/segment/internal/synth"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
)

// prepareData renders synth data into prepared trajectories, as benchgen
// does.
func prepareData(t testing.TB, enc tokenizer.Encoder, d synth.Data, width, height int) (*Codec, []string, []*Prepared) {
	t.Helper()
	c := mustCodec(t, enc)
	b := newBuilder(t, c, DefaultSystem)
	instr := map[string]string{}
	for _, tk := range d.Tasks {
		instr[tk.TaskID] = tk.Instruction
	}
	size := func(*schemas.Step) (int, int, error) { return width, height, nil }
	var ids []string
	var out []*Prepared
	k := 0
	for i := range d.Trajectories {
		tr := &d.Trajectories[i]
		j := k
		for j < len(d.Steps) && d.Steps[j].TrajectoryID == tr.TrajectoryID {
			j++
		}
		p, err := b.Prepare(Input{Trajectory: tr, Steps: d.Steps[k:j], Instruction: instr[tr.TaskID], ImageSize: size})
		if err != nil {
			t.Fatal(err)
		}
		k = j
		ids = append(ids, tr.TrajectoryID)
		out = append(out, p)
	}
	return c, ids, out
}

func digestAll(t testing.TB, c *Codec, ids []string, ps []*Prepared, prm Params) string {
	h := sha256.New()
	for i, p := range ps {
		items, _, err := Segment(c, p, prm)
		if err != nil {
			t.Fatal(err)
		}
		Digest(h, ids[i], items)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestPretokRoundTripAndPython: the pre-tokenized file segments exactly
// like the prepared trajectories it came from, and bench/segment_alg2.py
// (when python3 is installed) produces byte-identical items from it, with
// the literal and the incremental token diff.
func TestPretokRoundTripAndPython(t *testing.T) {
	enc := newFakeEncoder()
	d := synth.Generate(enc, synth.Options{Seed: 11, Trajectories: 25, Turns: 19, VaryTurns: true, Screenshots: 2, Width: 128, Height: 96})
	c, ids, ps := prepareData(t, enc, d, 128, 96)
	var buf bytes.Buffer
	pw, err := NewPretokWriter(&buf, c)
	must(t, err)
	for i, p := range ps {
		must(t, pw.Write(ids[i], p))
	}
	must(t, pw.Flush())
	path := filepath.Join(t.TempDir(), "alg2.jsonl")
	must(t, os.WriteFile(path, buf.Bytes(), 0o644))
	c2, back, err := ReadPretok(bytes.NewReader(buf.Bytes()))
	must(t, err)
	var ids2 []string
	var ps2 []*Prepared
	for _, b := range back {
		ids2 = append(ids2, b.ID)
		ps2 = append(ps2, b.Prepared)
	}
	python, pyErr := exec.LookPath("python3")
	for _, prm := range []Params{{Mode: ModeWindow, K: 5, Delta: 5}, {Mode: ModeWindow, K: 2, Delta: 3}, {Mode: ModeTrajectory}, {Mode: ModeStep, Window: 4}} {
		want := digestAll(t, c, ids, ps, prm)
		if got := digestAll(t, c2, ids2, ps2, prm); got != want {
			t.Fatalf("%+v: pre-tokenized round trip changed the items", prm)
		}
		if pyErr != nil {
			continue
		}
		for _, diff := range []string{"literal", "incremental"} {
			args := []string{"../../bench/segment_alg2.py", path, "--check", "--mode", string(prm.Mode),
				"--k", itoa(prm.K), "--delta", itoa(prm.Delta), "--window", itoa(prm.Window)}
			if diff == "incremental" {
				args = append(args, "--incremental")
			}
			cmd := exec.Command(python, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("python: %v\n%s", err, stderr.String())
			}
			var res struct {
				Digest string `json:"digest"`
				Diff   string `json:"diff"`
			}
			if err := json.Unmarshal(out, &res); err != nil || res.Diff != diff {
				t.Fatalf("python output %s: %v", out, err)
			}
			if res.Digest != want {
				t.Fatalf("%+v %s: Python's items differ from Go's", prm, diff)
			}
		}
	}
	if pyErr != nil {
		t.Log("python3 not found: the Go/Python cross-check was skipped")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
