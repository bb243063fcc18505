package osworld

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/server"
	"github.com/cualake/cualake/schemas"
)

// oracleRun records the oracle's actions and screenshots on the in-process
// simulator.
func oracleRun(t *testing.T, task schemas.Task, seed int64) ([]schemas.Action, [][]byte) {
	t.Helper()
	sim, err := simdesk.NewSim(simdesk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := simdesk.Oracle(task)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := sim.Reset(task, seed)
	if err != nil {
		t.Fatal(err)
	}
	var acts []schemas.Action
	shots := [][]byte{obs.Screenshot}
	for !obs.Done {
		a, err := pol.Next(obs)
		if err != nil {
			t.Fatal(err)
		}
		if obs, err = sim.Step(a); err != nil {
			t.Fatal(err)
		}
		acts = append(acts, a)
		shots = append(shots, obs.Screenshot)
	}
	return acts, shots
}

// firstOfEachFamily picks one task per built-in family.
func firstOfEachFamily() []schemas.Task {
	var out []schemas.Task
	seen := map[string]bool{}
	for _, t := range simdesk.Pool() {
		if f := simdesk.FamilyOf(t.TaskID); !seen[f] {
			seen[f] = true
			out = append(out, t)
		}
	}
	return out
}

// The client drives the simulator's server through whole episodes: the
// oracle's actions, sent as pyautogui over /execute, reproduce the
// in-process run pixel for pixel and the judge scores 1.
func TestClientDrivesServer(t *testing.T) {
	d, err := simdesk.New(simdesk.DefaultWidth, simdesk.DefaultHeight, 0)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(server.New(d))
	defer ts.Close()
	env, err := New(context.Background(), Options{BaseURL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if !env.Simulator() {
		t.Fatal("the simulator server was not detected")
	}
	for _, task := range firstOfEachFamily() {
		acts, shots := oracleRun(t, task, 4)
		obs, err := env.Reset(task, 4)
		if err != nil {
			t.Fatalf("%s: %v", task.TaskID, err)
		}
		if !bytes.Equal(obs.Screenshot, shots[0]) {
			t.Fatalf("%s: first screenshot differs from the in-process one", task.TaskID)
		}
		if score, _, err := env.Evaluate(); err != nil || score != 0 {
			t.Fatalf("%s: untouched state scored %v (%v)", task.TaskID, score, err)
		}
		for i, a := range acts {
			if obs, err = env.Step(a); err != nil {
				t.Fatalf("%s step %d: %v", task.TaskID, i, err)
			}
			if obs.ActionError != "" {
				t.Fatalf("%s step %d: %s", task.TaskID, i, obs.ActionError)
			}
			if !bytes.Equal(obs.Screenshot, shots[i+1]) {
				t.Fatalf("%s step %d (%+v): screenshot over HTTP differs from the in-process one", task.TaskID, i, a)
			}
		}
		if !obs.Done || !strings.HasPrefix(string(obs.Tree), `{"role":"desktop"`) {
			t.Fatalf("%s: episode not done or tree not JSON", task.TaskID)
		}
		score, detail, err := env.Evaluate()
		if err != nil || score != 1 {
			t.Fatalf("%s: score %v (%v): %s", task.TaskID, score, err, detail)
		}
	}
}

// hideSimdesk makes the simulator look like a VM: no /simdesk/ endpoints.
type hideSimdesk struct{ h http.Handler }

func (h hideSimdesk) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/simdesk/") {
		http.NotFound(w, r)
		return
	}
	h.h.ServeHTTP(w, r)
}

// Against a server that is not a simulator, judges over files are
// evaluated client-side through /file and /list_directory, and getters a VM
// cannot serve are errors, not silent zeros.
func TestClientEvaluatesFilesOnVM(t *testing.T) {
	for _, task := range firstOfEachFamily() {
		if !strings.HasPrefix(task.TaskID, "files-") && !strings.HasPrefix(task.TaskID, "editor-") {
			continue
		}
		d, _ := simdesk.New(simdesk.DefaultWidth, simdesk.DefaultHeight, 2)
		ts := httptest.NewServer(hideSimdesk{server.New(d)})
		env, err := New(context.Background(), Options{BaseURL: ts.URL, NoScreenshot: true, Sleep: func(time.Duration) {}})
		if err != nil {
			t.Fatal(err)
		}
		if env.Simulator() {
			t.Fatal("hidden simulator detected")
		}
		acts, _ := oracleRun(t, task, 2)
		if _, err := env.Reset(task, 2); err != nil {
			t.Fatalf("%s: %v", task.TaskID, err)
		}
		for _, a := range acts {
			if _, err := env.Step(a); err != nil {
				t.Fatal(err)
			}
		}
		score, detail, err := env.Evaluate()
		switch {
		case task.TaskID == "editor-save-001":
			if err == nil {
				t.Errorf("%s: editor_dirty over plain OSWorld should be unsupported, got %v %s", task.TaskID, score, detail)
			}
		case err != nil || score != 1:
			t.Errorf("%s: score %v (%v): %s", task.TaskID, score, err, detail)
		}
		ts.Close()
	}
}

func TestClientRejectsBadURL(t *testing.T) {
	if _, err := New(context.Background(), Options{BaseURL: "ftp://x"}); err == nil {
		t.Fatal("want an error")
	}
}

// TestClientDownloadsAndPostconfigOnVM: on a VM the client fetches
// download steps' files itself and uploads them, as OSWorld's
// SetupController does, and runs the evaluator's postconfig before judging.
func TestClientDownloadsAndPostconfigOnVM(t *testing.T) {
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/report.txt" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("draft"))
	}))
	defer files.Close()
	d, _ := simdesk.New(simdesk.DefaultWidth, simdesk.DefaultHeight, 2)
	ts := httptest.NewServer(hideSimdesk{server.New(d)})
	defer ts.Close()
	env, err := New(context.Background(), Options{BaseURL: ts.URL, NoScreenshot: true, NoTree: true, Sleep: func(time.Duration) {}})
	if err != nil {
		t.Fatal(err)
	}
	task := schemas.Task{TaskID: "dl", Feasible: true,
		Setup: `[{"type":"download","parameters":{"files":[{"url":"` + files.URL + `/report.txt","path":"/home/user/Desktop/report.txt"}]}}]`,
		Judge: `{"func":"exact_match","result":{"type":"vm_file","path":"/home/user/Desktop/final.txt","dest":"final.txt"},"expected":{"type":"rule","rules":{"expected":"draft"}},` +
			`"postconfig":[{"type":"execute","parameters":{"command":"cp ~/Desktop/report.txt ~/Desktop/final.txt","shell":true}}]}`}
	if _, err := env.Reset(task, 2); err != nil {
		t.Fatal(err)
	}
	if s, _ := d.S.FS.Read("/home/user/Desktop/report.txt"); s != "draft" {
		t.Fatalf("downloaded file holds %q", s)
	}
	score, detail, err := env.Evaluate()
	if err != nil || score != 1 {
		t.Fatalf("score %v %s %v", score, detail, err)
	}
	bad := task
	bad.Setup = `[{"type":"download","parameters":{"files":[{"url":"` + files.URL + `/missing","path":"/home/user/x"}]}}]`
	if _, err := env.Reset(bad, 2); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a failed download: %v", err)
	}
}
