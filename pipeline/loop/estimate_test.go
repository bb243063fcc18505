package loop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/progress"
)

// recording is how long each step of a config took in one `cualake run`
// on the 2-core machine (--json's step_seconds, in plan order).
type recording struct {
	Note  string `json:"note"`
	Steps []struct {
		Key     string  `json:"key"`
		Seconds float64 `json:"seconds"`
	} `json:"steps"`
}

// TestTimeLeftWithin30Percent replays the recorded runs: at the start of
// every step the estimate `cualake run` prints is within 30% of the time
// the rest of the run really took, from the first step on (or within 10 s,
// for the last seconds of the run, where 30% is less than the rounding of
// a printed estimate and a step's own jitter). The recordings are the
// default config's (the GRPO loop) and `make demo`'s (examples/demo.yaml).
func TestTimeLeftWithin30Percent(t *testing.T) {
	demo, err := Load(filepath.Join("..", "..", "examples", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		file string
		cfg  Config
	}{{"default-steps.json", Default()}, {"demo-steps.json", demo}} {
		t.Run(r.file, func(t *testing.T) { replayEstimate(t, r.file, r.cfg) })
	}
}

func replayEstimate(t *testing.T, file string, cfg Config) {
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var rec recording
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	steps := Plan(cfg)
	if len(steps) != len(rec.Steps) {
		t.Fatalf("the plan has %d steps, the recording %d: record the run again (cualake run --json, step_seconds)", len(steps), len(rec.Steps))
	}
	weights := make([]float64, len(steps))
	for i, s := range steps {
		if s.Key != rec.Steps[i].Key {
			t.Fatalf("step %d is %s in the plan, %s in the recording: record the run again", i, s.Key, rec.Steps[i].Key)
		}
		weights[i] = s.Weight
	}
	est := progress.NewEstimate(weights)
	for i, s := range rec.Steps {
		truth := 0.0
		for _, r := range rec.Steps[i:] {
			truth += r.Seconds
		}
		got := est.Left().Seconds()
		if d := got - truth; d > max(0.3*truth, 10) || d < -max(0.3*truth, 10) {
			t.Errorf("before step %d (%s): estimate %.0fs, the rest took %.0fs (%+.0f%%)", i+1, s.Key, got, truth, 100*d/truth)
		}
		est.Done(i, time.Duration(s.Seconds*float64(time.Second)))
	}
}
