package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// TestEncDecRemoved: the encoder-decoder policy was removed after 7878f89.
// train --policy encdec is refused with the message, and a lake holding one
// of its checkpoints (trained before the removal) gets an error naming that
// checkpoint from rollout --policy checkpoint and from train --objective
// grpo, not a load failure or another model.
func TestEncDecRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	if out, err := run(t, "simdesk", "pool"); err != nil {
		t.Fatal(err, out)
	}
	out, err := run(t, "train", "--objective", "sft", "--policy", "encdec")
	if err == nil || !strings.Contains(err.Error(), "encoder-decoder") || !strings.Contains(err.Error(), "7878f89") ||
		!strings.Contains(err.Error(), "causal") {
		t.Fatalf("train --policy encdec: %v\n%s", err, out)
	}

	// An old lake's checkpoint: the encoder-decoder's container header.
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	txn, err := l.Begin(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	data := append([]byte("cualake-policy\x00"), 1, 0, 0, 0, 2, 0, 0, 0, '{', '}')
	hash := schemas.HashBytes(data)
	if err := lake.AppendTable(ctx, txn, schemas.Blobs, []schemas.Blob{{Hash: hash, Mime: "application/vnd.cualake.policy", Size: int64(len(data)), Bytes: data}}); err != nil {
		t.Fatal(err)
	}
	ck := schemas.Checkpoint{Version: 1, ParentVersion: -1, Objective: "sft", Params: `{"policy":"encdec"}`, Blob: hash, Bytes: int64(len(data)), Iteration: -1, Device: "cpu"}
	if err := lake.AppendTable(ctx, txn, schemas.Checkpoints, []schemas.Checkpoint{ck}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx, lake.CommitInfo{Stage: "fixture"}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"rollout", "--policy", "checkpoint", "--n", "1", "--limit-tasks", "1"},
		{"train", "--objective", "grpo", "--steps", "1"},
	} {
		out, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "checkpoint v1 (blob "+hash[:12]+") is an encoder-decoder checkpoint") ||
			!strings.Contains(err.Error(), "7878f89") {
			t.Errorf("%v on an encoder-decoder checkpoint: %v\n%s", args, err, out)
		}
	}
}
