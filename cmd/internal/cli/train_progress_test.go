package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// A train run reports its optimiser steps, done of total, as it goes.
func TestTrainShowsOptimiserSteps(t *testing.T) {
	t.Setenv("CUALAKE_LAKE", filepath.Join(t.TempDir(), "lake"))
	if out, err := run(t, "rollout", "--policy", "oracle", "--source", "warmstart", "--n", "1", "--limit-tasks", "3", "--tree-only"); err != nil {
		t.Fatalf("demos: %v\n%s", err, out)
	}
	out, err := run(t, "train", "--objective", "sft", "--policy", "encdec", "--steps", "5", "--lr", "0.003", "--seed", "1")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	if !strings.Contains(out, "train sft: optimiser steps: 5/5 (") {
		t.Fatalf("no optimiser-step progress in the output:\n%s", out)
	}
}
