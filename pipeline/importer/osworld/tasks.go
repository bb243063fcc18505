package osworld

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cualake/cualake/pipeline/importer/record"
	"github.com/cualake/cualake/schemas"
)

// ParseTask parses one OSWorld task file into a tasks row. file is the path
// reported in errors and kept as Origin; domain is the folder the file sits
// in (the task's "snapshot" field is not reliable). When file is a
// <id>.json name the id must match it. The original bytes are kept in Raw,
// so fields cualake does not model are never lost.
func ParseTask(file, domain string, raw []byte) (schemas.Task, error) {
	bad := func(line int, field, format string, a ...any) (schemas.Task, error) {
		return schemas.Task{}, &record.Error{File: file, Line: line, Field: field, Reason: fmt.Sprintf(format, a...), Raw: string(raw), Table: schemas.Tasks.Name}
	}
	at := func(path ...string) int { return record.KeyLine(raw, path...) }
	if !utf8.Valid(raw) {
		return bad(1, "json", "file is not valid UTF-8")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return schemas.Task{}, record.FromJSON(file, 1, schemas.Tasks.Name, raw, err)
	}
	if top == nil {
		return bad(1, "json", "task is not a JSON object")
	}
	var id, instruction string
	if err := json.Unmarshal(top["id"], &id); err != nil || strings.TrimSpace(id) == "" {
		return bad(at("id"), "id", "want a non-empty string")
	}
	if stem := strings.TrimSuffix(filepath.Base(file), ".json"); strings.HasSuffix(file, ".json") && stem != id {
		return bad(at("id"), "id", "is %q but the file is named %s.json", id, stem)
	}
	if err := record.CheckComponent(id); err != nil {
		return bad(at("id"), "id", "cannot be a file name: %v", err)
	}
	if err := json.Unmarshal(top["instruction"], &instruction); err != nil || string(top["instruction"]) == "null" {
		return bad(at("instruction"), "instruction", "want a string")
	}
	setup := "[]"
	if c, ok := top["config"]; ok && string(c) != "null" {
		var steps []map[string]json.RawMessage
		if err := json.Unmarshal(c, &steps); err != nil {
			return bad(at("config"), "config", "want a list of setup steps {type, parameters}")
		}
		for i, s := range steps {
			var typ string
			if err := json.Unmarshal(s["type"], &typ); err != nil || typ == "" {
				return bad(at("config", strconv.Itoa(i), "type"), fmt.Sprintf("config[%d].type", i), "want a non-empty string")
			}
			if p, ok := s["parameters"]; ok && !isObject(p) {
				return bad(at("config", strconv.Itoa(i), "parameters"), fmt.Sprintf("config[%d].parameters", i), "want an object")
			}
		}
		setup = compact(c)
	}
	ev, ok := top["evaluator"]
	if !ok || !isObject(ev) {
		return bad(at("evaluator"), "evaluator", "want an object")
	}
	feasible, err := checkEvaluator(ev)
	if err != nil {
		var fe *fieldErr
		errors.As(err, &fe)
		return bad(at(append([]string{"evaluator"}, fe.path...)...), "evaluator."+fe.name, "%s", fe.msg)
	}
	var apps []string
	if r, ok := top["related_apps"]; ok && string(r) != "null" {
		if err := json.Unmarshal(r, &apps); err != nil {
			return bad(at("related_apps"), "related_apps", "want a list of strings")
		}
	}
	app := domain
	if len(apps) > 0 && apps[0] != "" {
		app = apps[0]
	}
	t := schemas.Task{TaskID: id, Domain: domain, App: app, Instruction: instruction, Setup: setup, Judge: compact(ev),
		Feasible: feasible, Abilities: apps, Source: schemas.SourceImported, Origin: filepath.ToSlash(file), Raw: string(raw)}
	if err := schemas.Tasks.Validate(&t); err != nil {
		return schemas.Task{}, record.FromValidation(file, 1, schemas.Tasks.Name, string(raw), err)
	}
	return t, nil
}

type fieldErr struct {
	name string   // as reported, e.g. result[1]
	path []string // for KeyLine, below evaluator
	msg  string
}

func (e *fieldErr) Error() string { return e.name + ": " + e.msg }

// checkEvaluator checks what OSWorld's harness needs of an evaluator: func
// is a string or a non-empty list of strings; with a list, result, expected
// and options (when present) are lists of the same length and conj is "and"
// or "or". It reports whether the task is feasible.
func checkEvaluator(ev json.RawMessage) (bool, error) {
	var e map[string]json.RawMessage
	if err := json.Unmarshal(ev, &e); err != nil {
		return false, &fieldErr{name: "", msg: "want an object"}
	}
	fn, ok := e["func"]
	if !ok {
		return false, &fieldErr{name: "func", path: []string{"func"}, msg: "is missing"}
	}
	var one string
	if json.Unmarshal(fn, &one) == nil {
		if one == "" {
			return false, &fieldErr{name: "func", path: []string{"func"}, msg: "is empty"}
		}
		return one != "infeasible", nil
	}
	var many []string
	if err := json.Unmarshal(fn, &many); err != nil || len(many) == 0 {
		return false, &fieldErr{name: "func", path: []string{"func"}, msg: "want a string or a non-empty list of strings"}
	}
	for _, k := range []string{"result", "expected", "options"} {
		v, ok := e[k]
		if !ok || string(v) == "null" {
			continue
		}
		var list []json.RawMessage
		if err := json.Unmarshal(v, &list); err != nil {
			return false, &fieldErr{name: k, path: []string{k}, msg: fmt.Sprintf("want a list parallel to func (%d entries)", len(many))}
		}
		if len(list) != len(many) {
			return false, &fieldErr{name: k, path: []string{k}, msg: fmt.Sprintf("has %d entries, func has %d", len(list), len(many))}
		}
	}
	if c, ok := e["conj"]; ok {
		var conj string
		if err := json.Unmarshal(c, &conj); err != nil || (conj != "and" && conj != "or") {
			return false, &fieldErr{name: "conj", path: []string{"conj"}, msg: `want "and" or "or"`}
		}
	}
	return true, nil
}

func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b) // already checked valid; unreachable
	}
	return buf.String()
}

// safeComponent reports whether s can be one path component of the export
// layout; record.CheckComponent says why not.
func safeComponent(s string) bool { return record.CheckComponent(s) == nil }

// ParseIndex parses an index file such as test_all.json: domain -> task ids.
func ParseIndex(file string, raw []byte) (map[string][]string, error) {
	var idx map[string][]string
	if err := json.Unmarshal(raw, &idx); err != nil {
		e := record.FromJSON(file, 1, "", raw, err)
		e.Reason = "want an object of domain -> list of task ids: " + e.Reason
		return nil, e
	}
	for d := range idx {
		if err := record.CheckComponent(d); err != nil {
			return nil, &record.Error{File: file, Line: record.KeyLine(raw, d), Field: d, Reason: "domain cannot be a folder name: " + err.Error()}
		}
	}
	return idx, nil
}

// TaskResult says what ReadTasks found beyond the tasks themselves.
type TaskResult struct {
	Files   int      // task files read
	Missing []string // domain/id pairs an index names that have no file
}

// ReadTasks reads dir/examples/<domain>/<id>.json, every file or, with an
// index file, only the tasks it names, and hands each task or reject to
// sink in domain, id order. index is looked up in dir first, then as given.
// A task file that is not a regular file under the default size cap is a
// reject.
func ReadTasks(ctx context.Context, dir, index string, sink record.Sink) (*TaskResult, error) {
	return ReadTasksFiltered(ctx, dir, index, nil, 0, sink)
}

// ReadTasksFiltered is ReadTasks of the task files keep accepts (all when
// nil), in the same order, with task files capped at maxFile bytes (0:
// record.DefaultMaxFileBytes).
func ReadTasksFiltered(ctx context.Context, dir, index string, keep func(domain, id string) bool, maxFile int64, sink record.Sink) (*TaskResult, error) {
	examples := filepath.Join(dir, "examples")
	if st, err := os.Stat(examples); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s: no examples/ folder (want OSWorld's evaluation_examples layout: examples/<domain>/<id>.json)", dir)
	}
	type item struct{ domain, id string }
	var items []item
	res := &TaskResult{}
	if index != "" {
		p := index
		if !filepath.IsAbs(index) {
			if _, err := os.Stat(filepath.Join(dir, index)); err == nil {
				p = filepath.Join(dir, index)
			}
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--index: %w", err)
		}
		idx, err := ParseIndex(index, raw)
		if err != nil {
			return nil, fmt.Errorf("--index: %w", err)
		}
		for d, ids := range idx {
			seen := map[string]bool{}
			for _, id := range ids {
				if seen[id] {
					continue
				}
				seen[id] = true
				if !safeComponent(id) {
					res.Missing = append(res.Missing, d+"/"+id)
					continue
				}
				if _, err := os.Stat(filepath.Join(examples, d, id+".json")); err != nil {
					res.Missing = append(res.Missing, d+"/"+id)
					continue
				}
				items = append(items, item{d, id})
			}
		}
		sort.Strings(res.Missing)
	} else {
		domains, err := os.ReadDir(examples)
		if err != nil {
			return nil, err
		}
		for _, d := range domains {
			if !d.IsDir() {
				continue
			}
			files, err := os.ReadDir(filepath.Join(examples, d.Name()))
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				if f.Type().IsRegular() && strings.HasSuffix(f.Name(), ".json") {
					items = append(items, item{d.Name(), strings.TrimSuffix(f.Name(), ".json")})
				}
			}
		}
	}
	sort.Slice(items, func(a, b int) bool {
		if items[a].domain != items[b].domain {
			return items[a].domain < items[b].domain
		}
		return items[a].id < items[b].id
	})
	if keep != nil {
		var mine []item
		for _, it := range items {
			if keep(it.domain, it.id) {
				mine = append(mine, it)
			}
		}
		items = mine
	}
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rel := filepath.ToSlash(filepath.Join("examples", it.domain, it.id+".json"))
		raw, err := record.ReadRegular(filepath.Join(dir, filepath.FromSlash(rel)), maxFile)
		switch {
		case errors.Is(err, record.ErrNotRegular), errors.Is(err, record.ErrTooLarge):
			if err := sink.Reject(&record.Error{File: rel, Field: "file", Reason: record.FileReason(path.Base(rel), err), Table: schemas.Tasks.Name}); err != nil {
				return nil, err
			}
			sink.Progress(i+1, len(items))
			continue
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%s: %w", rel, err)
		case err != nil:
			return nil, err
		}
		res.Files++
		t, err := ParseTask(rel, it.domain, raw)
		var re *record.Error
		switch {
		case errors.As(err, &re):
			if err := sink.Reject(re); err != nil {
				return nil, err
			}
		case err != nil:
			return nil, err
		default:
			if err := sink.Task(t); err != nil {
				return nil, err
			}
		}
		sink.Progress(i+1, len(items))
	}
	return res, nil
}
