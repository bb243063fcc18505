package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/simdesk"
)

// TestOSWorldPythonClient runs examples/osworld/controller.py, which sends
// the requests of OSWorld's PythonController and SetupController with
// python3-requests and parses the tree with xml.etree, against the server
// `cualake simdesk serve` runs (NewHTTPServer); its linearisation of the
// tree must equal LinearizeAT's.
func TestOSWorldPythonClient(t *testing.T) {
	d, err := simdesk.New(simdesk.DefaultWidth, simdesk.DefaultHeight, 1)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(d)
	go srv.Serve(ln)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := filepath.Join("..", "..", "..", "examples", "osworld", "controller.py")
	cmd := exec.CommandContext(ctx, "python3", script, "http://"+ln.Addr().String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var rep struct {
		OK     bool
		Checks []struct {
			Name   string
			OK     bool
			Detail string
		}
		AT         string
		Linearized string
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("controller.py: %v, stderr:\n%s\nstdout: %.500s", runErr, stderr.String(), stdout.String())
	}
	for _, c := range rep.Checks {
		if !c.OK {
			t.Errorf("%s: %s", c.Name, c.Detail)
		}
	}
	if !rep.OK || runErr != nil || len(rep.Checks) < 40 {
		t.Fatalf("controller.py: ok %v, %v, %d checks; stderr:\n%s", rep.OK, runErr, len(rep.Checks), stderr.String())
	}
	got, err := simdesk.LinearizeAT([]byte(rep.AT))
	if err != nil || got != rep.Linearized {
		t.Fatalf("LinearizeAT differs from the Python linearisation: %v\nGo:\n%s\nPython:\n%s", err, got, rep.Linearized)
	}
}
