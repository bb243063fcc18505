package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

const (
	markerKey = "lake.json"
	// MainRef is the branch every stage commits to.
	MainRef = "main"
)

// Lake is a handle on one lake.
type Lake struct {
	store Storage
	// Now is the clock for the informational committed_at field; tests pin it.
	Now func() time.Time
}

type marker struct {
	Format int    `json:"format"`
	Kind   string `json:"kind"`
}

// Init creates an empty lake in store (idempotent): the marker file. Main
// does not exist until the first commit creates it.
func Init(ctx context.Context, store Storage) (*Lake, error) {
	b, _ := json.Marshal(marker{Format: FormatVersion, Kind: "cualake"})
	if err := store.PutIfAbsent(ctx, markerKey, append(b, '\n')); err != nil && !errors.Is(err, ErrExist) {
		return nil, fmt.Errorf("init lake %s: %w", store, err)
	}
	return Open(ctx, store)
}

// Open returns the lake in store; ErrNotALake if it was never initialised.
func Open(ctx context.Context, store Storage) (*Lake, error) {
	b, err := store.Get(ctx, markerKey)
	if errors.Is(err, ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (run `cualake lake init`)", store, ErrNotALake)
	}
	if err != nil {
		return nil, fmt.Errorf("open lake %s: %w", store, err)
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil || m.Kind != "cualake" {
		return nil, fmt.Errorf("%s/%s: %w: malformed marker file", store, markerKey, ErrNotALake)
	}
	if m.Format != FormatVersion {
		return nil, fmt.Errorf("%s/%s: lake format %d, this cualake reads format %d", store, markerKey, m.Format, FormatVersion)
	}
	return &Lake{store: store, Now: time.Now}, nil
}

// OpenDir opens (or with create, initialises) a lake in a local folder.
func OpenDir(ctx context.Context, dir string, create bool) (*Lake, error) {
	if !create {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("%s: %w (run `cualake lake init`)", dir, ErrNotALake)
		}
	}
	st, err := NewLocal(dir)
	if err != nil {
		return nil, err
	}
	if create {
		return Init(ctx, st)
	}
	return Open(ctx, st)
}

// Storage returns the backend.
func (l *Lake) Storage() Storage { return l.store }

func (l *Lake) String() string { return l.store.String() }

// Head returns the snapshot id main points at: "" for a lake that has no
// history yet, ErrCorrupt if the ref is malformed, ErrDanglingHistory if
// main is missing although the lake holds a history.
func (l *Lake) Head(ctx context.Context) (string, error) {
	id, err := l.readRef(ctx, mainKey)
	if errors.Is(err, ErrNotExist) {
		return l.checkNoHistory(ctx)
	}
	return id, err
}

// Resolve turns a ref into a snapshot id: "" or "main" is the head; 4 to 64
// hex digits are a snapshot id or an unambiguous id prefix of 6+ digits,
// never a tag; any other name is a tag (ValidateRefName says which names
// are).
func (l *Lake) Resolve(ctx context.Context, ref string) (string, error) {
	switch {
	case ref == "" || ref == MainRef:
		id, err := l.Head(ctx)
		if err == nil && id == "" {
			return "", fmt.Errorf("lake %s has no snapshot yet: %w", l, ErrNotExist)
		}
		return id, err
	case isHexName(ref):
		return l.resolveID(ctx, strings.ToLower(ref))
	}
	if err := ValidateRefName(ref); err != nil {
		return "", fmt.Errorf("%q is neither a tag nor a snapshot id of lake %s: %w", ref, l, err)
	}
	id, err := l.readRef(ctx, tagsDir+ref)
	if errors.Is(err, ErrNotExist) {
		return "", fmt.Errorf("%q is neither a tag nor a snapshot id of lake %s: %w", ref, l, ErrNotExist)
	}
	return id, err
}

// resolveID finds the snapshot a full id or an id prefix names.
func (l *Lake) resolveID(ctx context.Context, ref string) (string, error) {
	if len(ref) == 64 {
		if _, err := l.store.Size(ctx, snapshotKey(ref)); err != nil {
			return "", fmt.Errorf("snapshot %s: %w", ref, ErrNotExist)
		}
		return ref, nil
	}
	if len(ref) < 6 {
		return "", fmt.Errorf("%q is too short for a snapshot id prefix (6+ hex digits; hex names are never tags): %w", ref, ErrNotExist)
	}
	ids, err := l.Snapshots(ctx)
	if err != nil {
		return "", err
	}
	var match []string
	for _, id := range ids {
		if strings.HasPrefix(id, ref) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return "", fmt.Errorf("no snapshot id of lake %s starts with %s (hex names are never tags): %w", l, ref, ErrNotExist)
	}
	return "", fmt.Errorf("snapshot prefix %s is ambiguous: %d snapshots match", ref, len(match))
}

// Snapshot reads and checks a snapshot's manifest.
func (l *Lake) Snapshot(ctx context.Context, id string) (*Manifest, error) {
	key := snapshotKey(id)
	b, err := l.store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	m, err := DecodeManifest(key, b)
	if err != nil {
		return nil, err
	}
	if m.ID != id {
		return nil, fmt.Errorf("manifest %s: %w: it holds snapshot %s", key, ErrCorrupt, m.ID)
	}
	return m, nil
}

// At resolves a ref and reads its manifest.
func (l *Lake) At(ctx context.Context, ref string) (*Manifest, error) {
	id, err := l.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return l.Snapshot(ctx, id)
}

// Log returns the snapshots from ref back to the first, newest first.
func (l *Lake) Log(ctx context.Context, ref string, limit int) ([]*Manifest, error) {
	id, err := l.Resolve(ctx, ref)
	if err != nil {
		if errors.Is(err, ErrNotExist) && (ref == "" || ref == MainRef) {
			return nil, nil
		}
		return nil, err
	}
	var out []*Manifest
	for id != "" && (limit <= 0 || len(out) < limit) {
		m, err := l.Snapshot(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, m)
		id = m.Parent
	}
	return out, nil
}

// Tag points name at a snapshot. Tags are immutable: re-tagging the same
// snapshot is a no-op, moving a tag is an error.
func (l *Lake) Tag(ctx context.Context, name, ref string) (string, error) {
	if err := ValidateRefName(name); err != nil {
		return "", fmt.Errorf("tag: %w", err)
	}
	id, err := l.Resolve(ctx, ref)
	if err != nil {
		return "", err
	}
	err = l.store.PutIfAbsent(ctx, tagsDir+name, formatRef(id))
	if errors.Is(err, ErrExist) {
		cur, err := l.readRef(ctx, tagsDir+name)
		if err != nil {
			return "", fmt.Errorf("tag %s: %w", name, err)
		}
		if cur == id {
			return id, nil
		}
		return "", fmt.Errorf("tag %s already points at %s: %w", name, cur, ErrExist)
	}
	if err != nil {
		return "", fmt.Errorf("tag %s: %w", name, err)
	}
	return id, nil
}

// Tags returns tag name -> snapshot id; a corrupt tag is an error.
func (l *Lake) Tags(ctx context.Context) (map[string]string, error) {
	keys, err := l.store.List(ctx, tagsDir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range keys {
		id, err := l.readRef(ctx, k)
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(k, tagsDir)] = id
	}
	return out, nil
}

// Snapshots lists the ids of every manifest in the lake, sorted.
func (l *Lake) Snapshots(ctx context.Context) ([]string, error) {
	keys, err := l.store.List(ctx, "snapshots/")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		if strings.HasSuffix(k, ".json") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(k, "snapshots/"), ".json"))
		}
	}
	sort.Strings(out)
	return out, nil
}
