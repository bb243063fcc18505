package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTorchFreeBuildLinksNoLibtorch: bin/cualake (-tags notorch, as `make
// build` builds it) must not depend on gotch, or every command pays
// libtorch's start-up again; the default build must, or the check proves
// nothing.
func TestTorchFreeBuildLinksNoLibtorch(t *testing.T) {
	deps := func(tags ...string) string {
		args := append([]string{"list", "-deps"}, tags...)
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	const gotch = "github.com/sugarme/gotch\n"
	if light := deps("-tags", "notorch"); strings.Contains(light, gotch) || strings.Contains(light, "cualake/trainer/stage\n") {
		t.Errorf("the notorch build imports gotch or trainer/stage:\n%s", grepLines(light, "gotch", "trainer"))
	}
	if full := deps(); !strings.Contains(full, gotch) {
		t.Error("the default build does not import gotch: the check above would pass vacuously")
	}
}

// TestTorchCommandsHandedOff builds the torch-free binary and runs it with
// $CUALAKE_TORCH pointing at a stand-in: the commands that load a model
// must reach it with their arguments and exit code, as the cualake command
// or as a stage binary; the others must not; a missing torch binary is a
// clear error naming its path and `make build`.
func TestTorchCommandsHandedOff(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cualake")
	if out, err := exec.Command("go", "build", "-tags", "notorch", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags notorch: %v\n%s", err, out)
	}
	stage := filepath.Join(dir, "train")
	if err := os.Link(bin, stage); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "fake-torch")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"torch: $*\"\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	lakeDir := filepath.Join(dir, "lake")
	run := func(torch, exe string, args ...string) (string, string, int) {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "CUALAKE_TORCH="+torch, "CUALAKE_LAKE="+lakeDir)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s %v: %v", exe, args, err)
		}
		return stdout.String(), stderr.String(), code
	}
	for _, tc := range []struct {
		exe  string
		args []string
		want string // what the stand-in prints
	}{
		{bin, []string{"train", "--objective", "sft"}, "torch: train --objective sft\n"},
		{bin, []string{"rollout", "--policy", "checkpoint:3", "--n", "1"}, "torch: rollout --policy checkpoint:3 --n 1\n"},
		{bin, []string{"run", "--config", "x.json"}, "torch: run --config x.json\n"},
		{bin, []string{"experiment", "run", "x.yaml"}, "torch: experiment run x.yaml\n"},
		{stage, []string{"--objective", "grpo"}, "torch: --objective grpo\n"},
	} {
		out, errOut, code := run(fake, tc.exe, tc.args...)
		if out != tc.want || code != 7 {
			t.Errorf("%s %v: stdout %q, exit %d (stderr %q); want %q from the torch binary, exit 7", filepath.Base(tc.exe), tc.args, out, code, errOut, tc.want)
		}
	}
	// Commands that never load a model run here, even with the stand-in set.
	for _, args := range [][]string{{"lake", "init"}, {"query", "--schema"}, {"rollout", "--help"}, {"experiment", "list"}} {
		out, errOut, code := run(fake, bin, args...)
		if strings.Contains(out, "torch:") || code != 0 {
			t.Errorf("cualake %v: stdout %q, stderr %q, exit %d; want it run by the torch-free binary", args, out, errOut, code)
		}
	}
	// segment --tokenizer checkpoint named the removed encoder-decoder's
	// vocabulary: the torch-free binary refuses it itself, saying so.
	out, errOut, code := run(fake, bin, "segment", "--tokenizer", "checkpoint")
	if strings.Contains(out, "torch:") || code == 0 || !strings.Contains(errOut, "7878f89") {
		t.Errorf("segment --tokenizer checkpoint: stdout %q, stderr %q, exit %d; want the torch-free binary to refuse it naming commit 7878f89", out, errOut, code)
	}
	missing := filepath.Join(dir, "nowhere", "cualake-torch")
	_, errOut, code = run(missing, bin, "train")
	if code != 1 || !strings.Contains(errOut, missing) || !strings.Contains(errOut, "make build") {
		t.Errorf("train without the torch binary: exit %d, stderr %q; want exit 1 naming %s and `make build`", code, errOut, missing)
	}
}

func grepLines(s string, words ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
