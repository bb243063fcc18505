package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

const (
	markerKey = "lake.json"
	// MainRef is the branch every stage commits to.
	MainRef  = "main"
	headsDir = "refs/heads/"
	tagsDir  = "refs/tags/"
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

// Init creates an empty lake in store (idempotent): the marker file and a
// main ref that points at no snapshot yet.
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

var refName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`)

// Head returns the snapshot id main points at ("" for an empty lake).
func (l *Lake) Head(ctx context.Context) (string, error) {
	b, err := l.store.Get(ctx, headsDir+MainRef)
	if errors.Is(err, ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read ref main: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Resolve turns a ref into a snapshot id: "" or "main" is the head; a tag
// name; a full snapshot id; or an unambiguous id prefix of 6+ characters.
func (l *Lake) Resolve(ctx context.Context, ref string) (string, error) {
	if ref == "" || ref == MainRef {
		id, err := l.Head(ctx)
		if err == nil && id == "" {
			return "", fmt.Errorf("lake %s has no snapshot yet: %w", l, ErrNotExist)
		}
		return id, err
	}
	if refName.MatchString(ref) && !strings.Contains(ref, "..") {
		b, err := l.store.Get(ctx, tagsDir+ref)
		if err == nil {
			return strings.TrimSpace(string(b)), nil
		}
		if !errors.Is(err, ErrNotExist) {
			return "", fmt.Errorf("read tag %s: %w", ref, err)
		}
	}
	if idPattern.MatchString(ref) {
		if _, err := l.store.Size(ctx, snapshotKey(ref)); err != nil {
			return "", fmt.Errorf("snapshot %s: %w", ref, ErrNotExist)
		}
		return ref, nil
	}
	if len(ref) >= 6 && regexp.MustCompile(`^[0-9a-f]+$`).MatchString(ref) {
		keys, err := l.store.List(ctx, "snapshots/")
		if err != nil {
			return "", err
		}
		var match []string
		for _, k := range keys {
			id := strings.TrimSuffix(strings.TrimPrefix(k, "snapshots/"), ".json")
			if strings.HasPrefix(id, ref) {
				match = append(match, id)
			}
		}
		switch len(match) {
		case 1:
			return match[0], nil
		case 0:
		default:
			return "", fmt.Errorf("snapshot prefix %s is ambiguous: %d snapshots match", ref, len(match))
		}
	}
	return "", fmt.Errorf("%q is neither a tag nor a snapshot id of lake %s: %w", ref, l, ErrNotExist)
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
	if !refName.MatchString(name) || strings.Contains(name, "..") || name == MainRef || idPattern.MatchString(name) {
		return "", fmt.Errorf("tag name %q: use letters, digits, '.', '_', '-' and '/' (not main, not a snapshot id)", name)
	}
	id, err := l.Resolve(ctx, ref)
	if err != nil {
		return "", err
	}
	err = l.store.PutIfAbsent(ctx, tagsDir+name, []byte(id+"\n"))
	if errors.Is(err, ErrExist) {
		cur, _ := l.Resolve(ctx, name)
		if cur == id {
			return id, nil
		}
		return "", fmt.Errorf("tag %s already points at %s: %w", name, cur, ErrExist)
	}
	return id, err
}

// Tags returns tag name -> snapshot id.
func (l *Lake) Tags(ctx context.Context) (map[string]string, error) {
	keys, err := l.store.List(ctx, tagsDir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range keys {
		b, err := l.store.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(k, tagsDir)] = strings.TrimSpace(string(b))
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
