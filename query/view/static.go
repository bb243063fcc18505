package view

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/query"
)

// WriteOptions configure Write.
type WriteOptions struct {
	Tokenizers Tokenizers
	// Lakes are folders nothing may be written into (besides any folder
	// holding a lake marker, which outfile refuses on its own).
	Lakes []string
}

// Written says what Write wrote.
type Written struct {
	Pages     []string // page files, the requested one first
	Blobs     int      // screenshot files written
	BlobsKept int      // screenshot files already there with the right hash
}

// Write renders the static page of kind (KindTrajectory, KindGroup or
// KindTask) for id into the file out, by outfile's rules (never inside a
// lake, never destroying a directory or a special file). Screenshots go
// into BlobDir beside out, each written once: a file already there whose
// sha256 is its name is kept. A group page comes with the pages of its
// rollouts, named by PageName beside it, so its links open.
func Write(ctx context.Context, e *query.Engine, kind, id, out string, o WriteOptions) (*Written, error) {
	dir := filepath.Dir(out)
	snap := ""
	if e.Snapshot != nil {
		snap = e.Snapshot.ID
	}
	opts := Options{Links: StaticLinks{}, Tokenizers: o.Tokenizers, Snapshot: snap,
		Note: "Static page written by cualake view; pages of other ids it links to open once written into this folder (cualake view KIND ID --out " + filepath.Join(dir, "KIND-ID.html") + ")."}
	w := &Written{}
	page := func(path string, render func(*bytes.Buffer) error) error {
		var buf bytes.Buffer
		if err := render(&buf); err != nil {
			return err
		}
		if err := outfile.WriteBytes(path, buf.Bytes(), o.Lakes...); err != nil {
			return fmt.Errorf("view: %w", err)
		}
		w.Pages = append(w.Pages, path)
		return nil
	}
	trajectory := func(tid, path string) error {
		t, err := LoadTrajectory(ctx, e, tid)
		if err != nil {
			return err
		}
		blobs, err := LoadBlobs(ctx, e, t.BlobHashes())
		if err != nil {
			return err
		}
		if err := writeBlobs(dir, blobs, o.Lakes, w); err != nil {
			return err
		}
		return page(path, func(b *bytes.Buffer) error { return RenderTrajectory(b, t, blobs, opts) })
	}
	switch kind {
	case KindTrajectory:
		return w, trajectory(id, out)
	case KindGroup:
		g, err := LoadGroup(ctx, e, id)
		if err != nil {
			return nil, err
		}
		blobs, err := LoadBlobs(ctx, e, g.BlobHashes())
		if err != nil {
			return nil, err
		}
		if err := writeBlobs(dir, blobs, o.Lakes, w); err != nil {
			return nil, err
		}
		if err := page(out, func(b *bytes.Buffer) error { return RenderGroup(b, g, blobs, opts) }); err != nil {
			return nil, err
		}
		for _, r := range g.Rollouts {
			tid := r.Row.TrajectoryID
			if err := trajectory(tid, filepath.Join(dir, PageName(KindTrajectory, tid))); err != nil {
				return nil, err
			}
		}
		return w, nil
	case KindTask:
		t, err := LoadTask(ctx, e, id)
		if err != nil {
			return nil, err
		}
		return w, page(out, func(b *bytes.Buffer) error { return RenderTask(b, t, opts) })
	}
	return nil, fmt.Errorf("view: unknown page kind %q (want %s, %s or %s)", kind, KindTrajectory, KindGroup, KindTask)
}

// writeBlobs writes the image blobs into dir/BlobDir, once each.
func writeBlobs(dir string, blobs map[string]*Blob, lakes []string, w *Written) error {
	for _, h := range sortedKeys(blobs) {
		b := blobs[h]
		name := BlobFile(h, b.Mime)
		if name == "" {
			continue
		}
		path := filepath.Join(dir, BlobDir, name)
		same, err := hasHash(path, h)
		if err != nil {
			return fmt.Errorf("view: %w", err)
		}
		if same {
			w.BlobsKept++
			continue
		}
		if err := outfile.WriteBytes(path, b.Bytes, lakes...); err != nil {
			return fmt.Errorf("view: screenshot %s: %w", h, err)
		}
		w.Blobs++
	}
	return nil
}

// hasHash says whether path is a regular file whose sha256 is hash.
func hasHash(path, hash string) (bool, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() {
		return false, nil // outfile decides what writing there means
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]) == hash, nil
}
