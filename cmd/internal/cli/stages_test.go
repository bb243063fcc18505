package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagedShellPipeline runs examples/ci/stages.sh, the loop as one
// process per stage binary, the way a CI system runs it.
func TestStagedShellPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary; skipped in -short mode")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, b := range []string{"cualake", "rollout", "train", "sample", "segment", "audit"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, b), "./cmd/"+b)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b, err, out)
		}
	}
	lakeDir := filepath.Join(t.TempDir(), "lake")
	cmd := exec.Command("bash", filepath.Join(root, "examples/ci/stages.sh"), lakeDir, "1", "4")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "CUALAKE_BIN="+bin, "SFT_STEPS=3", "SFT_BATCH=2", "BATCH=2")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("stages.sh: %v\n%s", err, out)
	}
	t.Setenv("CUALAKE_LAKE", lakeDir)
	got, err := run(t, "query", "--format", "csv", "select stage, count(*) from lake_snapshots group by 1 order by 1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"audit,1", "pool,1", "rollout,3", "sample,1", "segment,2", "train,2"} {
		if !strings.Contains(got, want+"\n") {
			t.Fatalf("lineage lacks %q:\n%s\nscript output:\n%s", want, got, out)
		}
	}
}
