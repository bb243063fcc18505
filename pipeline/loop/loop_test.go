package loop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadStrictAndValidate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte("iterations: 2\nsample: {sampler: dtac, batch: 8}\n"), 0o644)
	c, err := Load(p)
	if err != nil || c.Iterations != 2 || c.Sample.Sampler != "dtac" || c.Sample.Batch != 8 || c.Rollout.N != 8 {
		t.Fatalf("load over defaults: %+v %v", c, err)
	}
	os.WriteFile(p, []byte("iteratoins: 2\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "iteratoins") {
		t.Fatalf("a misspelt key must be an error naming it: %v", err)
	}
	os.WriteFile(p, []byte("rollout: {n: 1}\nsample: {sampler: lucky}\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "rollout.n") || !strings.Contains(err.Error(), "lucky") {
		t.Fatalf("invalid values must be named: %v", err)
	}
}

func TestPlanOrderAndKeys(t *testing.T) {
	c := Default()
	c.Iterations = 2
	steps := Plan(c)
	seen := map[string]bool{}
	var order []string
	for _, s := range steps {
		if seen[s.Key] {
			t.Fatalf("duplicate step key %s", s.Key)
		}
		seen[s.Key] = true
		order = append(order, s.Key)
	}
	want := "pool synthesize warm-demos warm-sft it00-eval initial-pass it01-sample it01-rollout it01-segment it01-train it01-eval it02-sample"
	if got := strings.Join(order, " "); !strings.HasPrefix(got, want) {
		t.Fatalf("plan order:\n%s\nwant prefix\n%s", got, want)
	}
	if RunID(c) == RunID(Default()) {
		t.Fatal("the run id ignores the config")
	}
	c.LimitTasks = 5
	for _, s := range Plan(c) {
		if s.Command[0] == "rollout" && !strings.Contains(strings.Join(s.Flags, " "), "--limit-tasks 5") {
			t.Fatalf("%s lacks the task limit", s.Key)
		}
	}
}
