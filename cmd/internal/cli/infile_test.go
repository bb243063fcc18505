package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/infile"
)

// TestNamedInputsRefuseDevicesAndHugeFiles: files the user names are read
// only when they are regular files under a size limit; /dev/zero used to
// be read until the process ran out of memory (or, for import jsonl,
// without end), and a FIFO blocked forever.
func TestNamedInputsRefuseDevicesAndHugeFiles(t *testing.T) {
	dir := t.TempDir()
	lakeDir := filepath.Join(dir, "lake")
	t.Setenv("CUALAKE_LAKE", lakeDir)
	if out, err := run(t, "lake", "init"); err != nil {
		t.Fatalf("lake init: %v %s", err, out)
	}
	commitFixture(t, lakeDir, 3)
	fifo := filepath.Join(dir, "q.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.sql")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 5<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"notebook", "run", "/dev/zero"}, "notebook /dev/zero: /dev/zero is a character device, want a regular file"},
		{[]string{"query", "--file", "/dev/zero"}, "--file: /dev/zero is a character device, want a regular file"},
		{[]string{"query", "--file", fifo}, "--file: " + fifo + " is a named pipe (FIFO), want a regular file"},
		{[]string{"query", "--file", big}, "--file: " + big + " is 5242880 bytes, over the limit of 4194304 bytes"},
		{[]string{"experiment", "run", "/dev/zero"}, "experiment /dev/zero is a character device, want a regular file"},
		{[]string{"import", "jsonl", "/dev/zero"}, "/dev/zero is a character device, want a JSONL file (a regular file)"},
		{[]string{"import", "jsonl", fifo}, fifo + " is a named pipe (FIFO), want a JSONL file (a regular file)"},
	} {
		type result struct {
			out string
			err error
		}
		done := make(chan result, 1)
		go func() { out, err := run(t, tc.args...); done <- result{out, err} }()
		select {
		case r := <-done:
			if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
				t.Errorf("%s: %v (%s), want an error containing %q", strings.Join(tc.args, " "), r.err, r.out, tc.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still running after 30 s", strings.Join(tc.args, " "))
		}
	}
	// A regular file is still read.
	sql := filepath.Join(dir, "q.sql")
	os.WriteFile(sql, []byte("select count(*) + 39 as x from tasks"), 0o600)
	if out, err := run(t, "query", "--format", "csv", "--file", sql); err != nil || !strings.Contains(out, "42") {
		t.Errorf("query --file %s: %v %s", sql, err, out)
	}
	// --file - reads standard input, bounded like a file.
	stdin := func(in io.Reader, args ...string) (string, error) {
		app := App()
		var out bytes.Buffer
		app.Reader, app.Writer, app.ErrWriter = in, &out, &out
		err := RunArgs(context.Background(), app, append([]string{"cualake"}, args...))
		return out.String(), err
	}
	if out, err := stdin(strings.NewReader("select count(*) + 40 as x from tasks"), "query", "--format", "csv", "--file", "-"); err != nil || !strings.Contains(out, "43") {
		t.Errorf("query --file -: %v %s", err, out)
	}
	huge := io.LimitReader(spaces{}, infile.MaxText+10)
	if _, err := stdin(huge, "query", "--file", "-"); !errors.Is(err, infile.ErrTooLarge) || !strings.Contains(err.Error(), "standard input has more than 4194304 bytes") {
		t.Errorf("query --file - of 4 MiB and more: %v", err)
	}
}

type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
