package lake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
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
// parent exists), every ref and tag, and re-hashes every data file that any
// snapshot references. progress, if set, is called after each file.
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
	head, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	if head != "" && !known[head] {
		rep.Problems = append(rep.Problems, Problem{Key: headsDir + MainRef, Problem: "points at missing or invalid snapshot " + head})
	}
	tags, err := l.Tags(ctx)
	if err != nil {
		return nil, err
	}
	for name, id := range tags {
		if !known[id] {
			rep.Problems = append(rep.Problems, Problem{Key: tagsDir + name, Problem: "points at missing or invalid snapshot " + id})
		}
	}
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

// GC removes data files no snapshot references and temporary files that
// interrupted writes left, sparing files younger than grace that a running
// commit may be about to reference. It refuses to run if any manifest is unreadable,
// since it could not know which files that snapshot needs.
func (l *Lake) GC(ctx context.Context, dryRun bool, grace time.Duration) (*GCReport, error) {
	ids, err := l.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, id := range ids {
		m, err := l.Snapshot(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("gc refuses to run: %w", err)
		}
		for _, tf := range m.Tables {
			for _, f := range tf.Files {
				live[f.Path] = true
			}
		}
	}
	keys, err := l.store.List(ctx, "data/")
	if err != nil {
		return nil, err
	}
	rep := &GCReport{Removed: []string{}, DryRun: dryRun}
	for _, k := range keys {
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
	if loc, ok := l.store.(*Local); ok {
		left, err := loc.Leftovers()
		if err != nil {
			return rep, err
		}
		for _, p := range left {
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
