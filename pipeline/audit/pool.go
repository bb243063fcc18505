package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// Item is one task of a pool, reduced to what the overlap audit compares.
type Item struct {
	ID          string
	Domain      string
	Source      string
	Instruction string
	Setup       string // JSON list of setup steps
	Judge       string // JSON evaluator spec
}

// Pool is a set of tasks with a description of where they came from.
type Pool struct {
	Desc  map[string]any // recorded in the audit's params
	Items []Item
}

// Generated task sources: the training side of an in-snapshot overlap.
var GeneratedSources = []string{schemas.SourceSynthesized, schemas.SourceSplit, schemas.SourceComposed}

// ReferenceSources: the evaluation side of an in-snapshot overlap.
var ReferenceSources = []string{schemas.SourceImported, schemas.SourceSeed}

// TaskItems converts task rows to pool items, keeping only the given
// sources (all when sources is empty).
func TaskItems(tasks []schemas.Task, sources []string) []Item {
	keep := map[string]bool{}
	for _, s := range sources {
		keep[s] = true
	}
	var out []Item
	for _, t := range tasks {
		if len(keep) > 0 && !keep[t.Source] {
			continue
		}
		out = append(out, Item{ID: t.TaskID, Domain: t.Domain, Source: t.Source, Instruction: t.Instruction, Setup: t.Setup, Judge: t.Judge})
	}
	return out
}

// Within modes: how a snapshot's own tasks split into a training and an
// evaluation pool when overlap runs without --against.
const (
	WithinSource = "source" // synthesized/split/composed against imported/seed
	WithinSplit  = "split"  // split=train against split=heldout
	WithinAuto   = "auto"   // split when any task is held out, else source
)

// WithinPools splits one snapshot's tasks into the two pools.
func WithinPools(tasks []schemas.Task, mode, snapshot string) (train, eval Pool, err error) {
	if mode == "" || mode == WithinAuto {
		mode = WithinSource
		for _, t := range tasks {
			if t.Split == "heldout" {
				mode = WithinSplit
				break
			}
		}
	}
	desc := func(side string, v any) map[string]any {
		return map[string]any{"snapshot": snapshot, "by": mode, side: v}
	}
	switch mode {
	case WithinSource:
		return Pool{Desc: desc("sources", GeneratedSources), Items: TaskItems(tasks, GeneratedSources)},
			Pool{Desc: desc("sources", ReferenceSources), Items: TaskItems(tasks, ReferenceSources)}, nil
	case WithinSplit:
		var tr, ev []schemas.Task
		for _, t := range tasks {
			switch t.Split {
			case "train":
				tr = append(tr, t)
			case "heldout":
				ev = append(ev, t)
			}
		}
		return Pool{Desc: desc("split", "train"), Items: TaskItems(tr, nil)},
			Pool{Desc: desc("split", "heldout"), Items: TaskItems(ev, nil)}, nil
	}
	return Pool{}, Pool{}, fmt.Errorf("overlap: pools by %q: want %s, %s or %s", mode, WithinAuto, WithinSource, WithinSplit)
}

// IsOSWorldDir reports whether dir looks like an OSWorld
// evaluation_examples folder (examples/<domain>/<id>.json) or its examples
// subfolder.
func IsOSWorldDir(dir string) bool {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return false
	}
	root := examplesRoot(dir)
	matches, _ := filepath.Glob(filepath.Join(root, "*", "*.json"))
	return len(matches) > 0
}

func examplesRoot(dir string) string {
	if st, err := os.Stat(filepath.Join(dir, "examples")); err == nil && st.IsDir() {
		return filepath.Join(dir, "examples")
	}
	return dir
}

// osworldTask is the part of an OSWorld task file the audit needs.
type osworldTask struct {
	ID          string          `json:"id"`
	Instruction string          `json:"instruction"`
	Config      json.RawMessage `json:"config"`
	Evaluator   json.RawMessage `json:"evaluator"`
}

// ReadOSWorld reads an OSWorld evaluation_examples folder directly:
// examples/<domain>/<id>.json, the domain being the folder name; the setup
// is the task's `config` and the judge its `evaluator`, both as written.
// Files that do not parse are skipped and listed. The pool's description
// carries a SHA-256 over every file read, so an audit names exactly which
// tasks it compared against.
func ReadOSWorld(dir string) (Pool, error) {
	root := examplesRoot(dir)
	files, err := filepath.Glob(filepath.Join(root, "*", "*.json"))
	if err != nil {
		return Pool{}, fmt.Errorf("read OSWorld tasks in %s: %w", dir, err)
	}
	sort.Strings(files)
	h := sha256.New()
	var items []Item
	var skipped []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return Pool{}, fmt.Errorf("read OSWorld task %s: %w", f, err)
		}
		rel, _ := filepath.Rel(root, f)
		rel = filepath.ToSlash(rel)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
		var t osworldTask
		if err := json.Unmarshal(b, &t); err != nil {
			skipped = append(skipped, rel+": "+err.Error())
			continue
		}
		if t.ID == "" {
			t.ID = strings.TrimSuffix(filepath.Base(f), ".json")
		}
		items = append(items, Item{ID: t.ID, Domain: filepath.Base(filepath.Dir(f)), Source: "osworld",
			Instruction: t.Instruction, Setup: rawOr(t.Config, "[]"), Judge: rawOr(t.Evaluator, "{}")})
	}
	if len(items) == 0 {
		return Pool{}, fmt.Errorf("read OSWorld tasks in %s: no examples/<domain>/<id>.json files parse", dir)
	}
	desc := map[string]any{"osworld": dir, "files": len(files), "sha256": hex.EncodeToString(h.Sum(nil))}
	if len(skipped) > 0 {
		desc["skipped"] = skipped
	}
	return Pool{Desc: desc, Items: items}, nil
}

func rawOr(r json.RawMessage, def string) string {
	if len(r) == 0 || string(r) == "null" {
		return def
	}
	return string(r)
}
