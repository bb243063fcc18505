// Package exporter writes a snapshot's data in other tools' shapes: task
// pools in OSWorld's evaluation_examples layout, and task pools, batches and
// segments as Parquet datasets for verl-style trainers. Output is a pure
// function of the snapshot: the same snapshot gives the same bytes.
package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/schemas"
)

// osworldTask is the shape of a task cualake built (no Raw), in OSWorld's
// field order.
type osworldTask struct {
	ID          string          `json:"id"`
	Snapshot    string          `json:"snapshot"`
	Instruction string          `json:"instruction"`
	Source      string          `json:"source"`
	Config      json.RawMessage `json:"config"`
	Trajectory  string          `json:"trajectory"`
	RelatedApps []string        `json:"related_apps"`
	Evaluator   json.RawMessage `json:"evaluator"`
}

// TaskJSON returns a task in OSWorld's JSON: the original bytes of an
// imported task, or, for a task cualake made, one built from its columns
// (config from Setup, evaluator from Judge, snapshot = domain, source =
// "cualake:<source>").
func TaskJSON(t *schemas.Task) ([]byte, error) {
	if t.Raw != "" {
		return []byte(t.Raw), nil
	}
	setup, judge := t.Setup, t.Judge
	if setup == "" {
		setup = "[]"
	}
	if judge == "" {
		judge = "{}"
	}
	if !json.Valid([]byte(setup)) || !json.Valid([]byte(judge)) {
		return nil, fmt.Errorf("task %s: setup or judge is not valid JSON", t.TaskID)
	}
	apps := t.Abilities
	if t.App != "" {
		apps = []string{t.App}
	}
	if apps == nil {
		apps = []string{}
	}
	o := osworldTask{ID: t.TaskID, Snapshot: t.Domain, Instruction: t.Instruction, Source: "cualake:" + t.Source,
		Config: json.RawMessage(setup), Trajectory: "trajectories/", RelatedApps: apps, Evaluator: json.RawMessage(judge)}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(o); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.TaskID, err)
	}
	return buf.Bytes(), nil
}

// OSWorldReport says what OSWorldTasks wrote.
type OSWorldReport struct {
	Snapshot string         `json:"snapshot"`
	Dir      string         `json:"dir"`
	Tasks    int            `json:"tasks"`
	Domains  map[string]int `json:"domains"`
	FromRaw  int            `json:"from_raw"` // written byte-exactly from the imported original
}

// OSWorldTasks writes the tasks of snapshot m under dir as
// examples/<domain>/<id>.json plus test_all.json (domain -> sorted ids), so
// the pool runs in OSWorld's own harness. dir must be absent or an empty
// directory, outside any lake, so stale tasks never mix in and nothing is
// overwritten; the tasks are staged in a private folder beside it and
// renamed into place (see outfile.WriteDir).
func OSWorldTasks(ctx context.Context, l *lake.Lake, m *lake.Manifest, dir string) (*OSWorldReport, error) {
	rep := &OSWorldReport{Snapshot: m.ID, Dir: dir, Domains: map[string]int{}}
	err := outfile.WriteDir(dir, func(tmp string) error { return writeOSWorld(ctx, l, m, tmp, rep) }, lakeRoots(l)...)
	if err != nil {
		return nil, fmt.Errorf("export osworld-tasks: %w", err)
	}
	return rep, nil
}

// lakeRoots names l's folder when it is a local one, so that outputs are
// refused inside it.
func lakeRoots(l *lake.Lake) []string {
	if local, ok := l.Storage().(interface{ Root() string }); ok {
		return []string{local.Root()}
	}
	return nil
}

// writeOSWorld writes the tasks and index into the fresh folder dir.
func writeOSWorld(ctx context.Context, l *lake.Lake, m *lake.Manifest, dir string, rep *OSWorldReport) error {
	examples := filepath.Join(dir, "examples")
	index := map[string][]string{}
	written := map[string]bool{}
	err := lake.ScanTable(ctx, l, m, schemas.Tasks, 256, func(rows []schemas.Task) error {
		for i := range rows {
			t := &rows[i]
			if !safeComponent(t.Domain) || !safeComponent(t.TaskID) {
				return fmt.Errorf("task %q of domain %q: cannot be a file path in OSWorld's layout", t.TaskID, t.Domain)
			}
			key := t.Domain + "/" + t.TaskID
			if written[key] {
				return fmt.Errorf("task %s appears twice in domain %s", t.TaskID, t.Domain)
			}
			written[key] = true
			b, err := TaskJSON(t)
			if err != nil {
				return err
			}
			d := filepath.Join(examples, t.Domain)
			if err := os.MkdirAll(d, 0o777); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(d, t.TaskID+".json"), b, 0o666); err != nil {
				return err
			}
			index[t.Domain] = append(index[t.Domain], t.TaskID)
			rep.Tasks++
			rep.Domains[t.Domain]++
			if t.Raw != "" {
				rep.FromRaw++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, ids := range index {
		sort.Strings(ids)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(index); err != nil { // map keys are sorted: deterministic
		return err
	}
	// OSWorld's index files (json.dump with indent=2) end without a newline.
	return os.WriteFile(filepath.Join(dir, "test_all.json"), bytes.TrimSuffix(buf.Bytes(), []byte("\n")), 0o666)
}

func safeComponent(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}
