package lake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Problem is one thing verify found wrong.
type Problem struct {
	Snapshot string `json:"snapshot,omitempty"`
	Key      string `json:"key"`
	Problem  string `json:"problem"`
}

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Snapshots int       `json:"snapshots"`
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	Problems  []Problem `json:"problems"`
}

// OK reports whether nothing is wrong.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// Verify checks every manifest (format, id, known tables and versions, its
// parent exists), every ref (its bytes, its name, the snapshot it names; a
// missing main on a lake with a history is a dangling history), and
// re-hashes every data file that any snapshot references. progress, if
// set, is called after each file.
func (l *Lake) Verify(ctx context.Context, progress func(done, total int)) (*VerifyReport, error) {
	rep := &VerifyReport{Problems: []Problem{}}
	ids, err := l.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	files := map[string]File{}
	owner := map[string]string{}
	var manifests []*Manifest
	for _, id := range ids {
		m, err := l.Snapshot(ctx, id)
		if err != nil {
			rep.Problems = append(rep.Problems, Problem{Snapshot: id, Key: snapshotKey(id), Problem: err.Error()})
			continue
		}
		known[id] = true
		manifests = append(manifests, m)
	}
	rep.Snapshots = len(manifests)
	for _, m := range manifests {
		if m.Parent != "" && !known[m.Parent] {
			rep.Problems = append(rep.Problems, Problem{Snapshot: m.ID, Key: snapshotKey(m.ID), Problem: "parent " + m.Parent + " is missing or invalid"})
		}
		for _, name := range m.TableNames() {
			for _, f := range m.Tables[name].Files {
				if prev, ok := files[f.Path]; ok && (prev.SHA256 != f.SHA256 || prev.Bytes != f.Bytes || prev.Rows != f.Rows) {
					rep.Problems = append(rep.Problems, Problem{Snapshot: m.ID, Key: f.Path, Problem: "manifests disagree about this file"})
				}
				files[f.Path] = f
				owner[f.Path] = m.ID
			}
		}
	}
	refProblems, err := l.verifyRefs(ctx, known, manifests)
	if err != nil {
		return nil, err
	}
	rep.Problems = append(rep.Problems, refProblems...)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for i, p := range paths {
		f := files[p]
		sum, n, err := l.hashObject(ctx, p)
		switch {
		case err != nil:
			rep.Problems = append(rep.Problems, Problem{Snapshot: owner[p], Key: p, Problem: err.Error()})
		case n != f.Bytes:
			rep.Problems = append(rep.Problems, Problem{Snapshot: owner[p], Key: p, Problem: fmt.Sprintf("%d bytes, manifest says %d", n, f.Bytes)})
		case sum != f.SHA256:
			rep.Problems = append(rep.Problems, Problem{Snapshot: owner[p], Key: p, Problem: "sha256 is " + sum + ", manifest says " + f.SHA256})
		}
		rep.Files++
		rep.Bytes += n
		if progress != nil {
			progress(i+1, len(paths))
		}
	}
	sort.Slice(rep.Problems, func(a, b int) bool { return rep.Problems[a].Key < rep.Problems[b].Key })
	return rep, nil
}

func (l *Lake) hashObject(ctx context.Context, key string) (string, int64, error) {
	r, err := l.store.Open(ctx, key)
	if err != nil {
		return "", 0, err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return "", n, fmt.Errorf("read %s: %w", key, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// GCReport says what gc removed.
type GCReport struct {
	Removed []string `json:"removed"`
	Kept    int      `json:"kept"`
	Bytes   int64    `json:"bytes_freed"`
	DryRun  bool     `json:"dry_run"`
}

// GC removes data files no manifest references and temporary files that
// interrupted writes left, sparing files younger than grace that a running
// commit may be about to reference. Every manifest's files are kept, also
// those of snapshots no ref reaches (orphans of failed commits, an
// abandoned history): they cost only space, and lineage, merges and people
// may still name those snapshots by id. gc refuses to run if any manifest
// is unreadable, any ref is corrupt, main is missing on a lake with a
// history, or a ref reaches (through parents) a snapshot whose manifest is
// missing: it could not know which files those snapshots need. It never
// deletes under refs/.
func (l *Lake) GC(ctx context.Context, dryRun bool, grace time.Duration) (*GCReport, error) {
	ids, err := l.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	manifests := map[string]*Manifest{}
	live := map[string]bool{}
	for _, id := range ids {
		m, err := l.Snapshot(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("gc refuses to run: %w", err)
		}
		manifests[id] = m
		for _, tf := range m.Tables {
			for _, f := range tf.Files {
				live[f.Path] = true
			}
		}
	}
	if err := l.checkReachable(ctx, manifests); err != nil {
		return nil, fmt.Errorf("gc refuses to run: %w", err)
	}
	keys, err := l.store.List(ctx, "data/")
	if err != nil {
		return nil, err
	}
	rep := &GCReport{Removed: []string{}, DryRun: dryRun}
	loc, local := l.store.(*Local)
	for _, k := range keys {
		if local && loc.inNestedLake(filepath.Join(loc.Root(), filepath.FromSlash(k))) {
			// never delete another lake (OpenDir refuses to make one here,
			// but an older cualake or a copy may have)
			rep.Kept++
			continue
		}
		if live[k] || l.young(ctx, k, grace) {
			rep.Kept++
			continue
		}
		if n, err := l.store.Size(ctx, k); err == nil {
			rep.Bytes += n
		}
		rep.Removed = append(rep.Removed, k)
		if !dryRun {
			if err := l.store.Delete(ctx, k); err != nil {
				return rep, err
			}
		}
	}
	if local {
		left, err := loc.Leftovers()
		if err != nil {
			return rep, err
		}
		for _, p := range left {
			if loc.inNestedLake(p) {
				continue
			}
			if rel, _ := filepath.Rel(loc.Root(), p); strings.HasPrefix(filepath.ToSlash(rel), "refs/") {
				// A temporary file of an interrupted ref write looks like a
				// ref named like one (which older versions accepted): keep.
				continue
			}
			if st, err := os.Stat(p); err == nil && time.Since(st.ModTime()) < grace {
				continue // a writer may still be using it
			}
			rep.Removed = append(rep.Removed, strings.TrimPrefix(p, loc.Root()+"/"))
			if !dryRun {
				if err := removeFile(p); err != nil {
					return rep, err
				}
			}
		}
	}
	return rep, nil
}

// young reports whether a local object is younger than grace.
func (l *Lake) young(ctx context.Context, key string, grace time.Duration) bool {
	if grace <= 0 {
		return false
	}
	// Remote stores say when an object was written; asking them avoids
	// downloading every unreferenced file into the cache to stat it.
	if mt, ok := l.store.(interface {
		ModTime(context.Context, string) (time.Time, error)
	}); ok {
		t, err := mt.ModTime(ctx, key)
		return err == nil && time.Since(t) < grace
	}
	p, err := l.store.LocalPath(ctx, key)
	if err != nil {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && time.Since(st.ModTime()) < grace
}

// verifyRefs checks every ref under refs/: its bytes parse, its name is one
// cualake accepts, and the snapshot it names exists (known). A missing main
// is fine for a lake without a history and a dangling history otherwise.
func (l *Lake) verifyRefs(ctx context.Context, known map[string]bool, manifests []*Manifest) ([]Problem, error) {
	var out []Problem
	keys, err := l.store.List(ctx, "refs/")
	if err != nil {
		return nil, err
	}
	sawMain := false
	for _, k := range keys {
		sawMain = sawMain || k == mainKey
		var nameProblem string
		switch {
		case k == mainKey:
		case strings.HasPrefix(k, headsDir):
			nameProblem = refNameProblem(strings.TrimPrefix(k, headsDir))
		case strings.HasPrefix(k, tagsDir):
			nameProblem = refNameProblem(strings.TrimPrefix(k, tagsDir))
		case strings.HasPrefix(k, rootsDir):
			if !idPattern.MatchString(strings.TrimPrefix(k, rootsDir)) {
				nameProblem = "a root record is named by the snapshot id it holds"
			}
		default:
			nameProblem = "not a ref cualake knows (refs/heads/, refs/tags/, refs/roots/)"
		}
		if nameProblem != "" {
			out = append(out, Problem{Key: k, Problem: "bad ref name: " + nameProblem})
		}
		id, err := l.readRef(ctx, k)
		switch {
		case errors.Is(err, ErrCorrupt):
			out = append(out, Problem{Key: k, Problem: err.Error()})
		case err != nil:
			return nil, err
		case !known[id]:
			out = append(out, Problem{Snapshot: id, Key: k, Problem: "points at missing or invalid snapshot " + id})
		case strings.HasPrefix(k, rootsDir) && strings.TrimPrefix(k, rootsDir) != id:
			out = append(out, Problem{Snapshot: id, Key: k, Problem: "a root record holds another id, " + id})
		}
	}
	if sawMain {
		return out, nil
	}
	// Main can also be unreadable without being listed (a directory).
	if _, err := l.readRef(ctx, mainKey); !errors.Is(err, ErrNotExist) {
		if errors.Is(err, ErrCorrupt) {
			return append(out, Problem{Key: mainKey, Problem: err.Error()}), nil
		}
		return out, err
	}
	ev, err := l.historyEvidence(ctx)
	if err != nil || ev == "" {
		return out, err
	}
	var names []string
	for i, m := range leaves(manifests) {
		if i == 3 {
			names = append(names, "...")
			break
		}
		names = append(names, fmt.Sprintf("%s (%s, %s)", m.ID, m.Stage, m.CommittedAt))
	}
	return append(out, Problem{Key: mainKey, Problem: fmt.Sprintf(
		"missing, but the lake holds a history (%s): a dangling history, not an empty lake; newest leaf snapshots: %s; restore main with the one to keep (printf '%%s\\n' <id> > %s) or start an unrelated root with --new-history",
		ev, strings.Join(names, ", "), mainKey)}), nil
}

// checkReachable walks every ref back through parents and fails on a
// corrupt ref, on a missing main where the lake has a history, and on any
// reachable snapshot that manifests (every readable manifest) lacks.
func (l *Lake) checkReachable(ctx context.Context, manifests map[string]*Manifest) error {
	refs, err := l.refs(ctx)
	if err != nil {
		return err
	}
	if _, ok := refs[mainKey]; !ok {
		if _, err := l.readRef(ctx, mainKey); !errors.Is(err, ErrNotExist) {
			return err
		}
		if _, err := l.checkNoHistory(ctx); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(refs))
	for k := range refs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[string]bool{}
	for _, k := range keys {
		for id := refs[k]; id != "" && !seen[id]; {
			m, ok := manifests[id]
			if !ok {
				return fmt.Errorf("%s reaches snapshot %s, whose manifest is missing: %w", k, id, ErrNotExist)
			}
			seen[id] = true
			id = m.Parent
		}
	}
	return nil
}
