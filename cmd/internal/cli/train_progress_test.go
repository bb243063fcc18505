package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// A train run reports its optimiser steps, done of total, as it goes.
func TestTrainShowsOptimiserSteps(t *testing.T) {
	t.Setenv("CUALAKE_LAKE", filepath.Join(t.TempDir(), "lake"))
	if out, err := run(t, "rollout", "--policy", "oracle", "--source", "warmstart", "--n", "1", "--limit-tasks", "3"); err != nil {
		t.Fatalf("demos: %v\n%s", err, out)
	}
	if out, err := run(t, "segment", "--view", "pointer", "--image-tokens", "8"); err != nil {
		t.Fatalf("segment: %v\n%s", err, out)
	}
	out, err := run(t, "train", "--objective", "sft", "--steps", "5", "--batch", "2", "--lr", "0.003", "--seed", "1")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	if !strings.Contains(out, "train sft: optimiser steps: 5/5 (") {
		t.Fatalf("no optimiser-step progress in the output:\n%s", out)
	}
}
