package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cualake/cualake/pipeline/outfile"
)

const (
	markerKey = "lake.json"
	// MainRef is the branch every stage commits to.
	MainRef = "main"
)

// Lake is a handle on one lake.
type Lake struct {
	store Storage
	// branch is the branch "" resolves to and Begin("") commits to; ""
	// means main (see OnBranch).
	branch string
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
	// A lake inside another lake's folder is in the outer lake's files: its
	// gc (data/) or a leftover sweep would delete it.
	if outer := outerLake(dir); outer != "" {
		return nil, fmt.Errorf("lake %s: %w: %s holds the lake marker %s; put the lake outside it (move an existing one out with mv)", dir, ErrNestedLake, outer, markerKey)
	}
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

// outerLake returns the nearest folder above dir that holds a lake marker
// (a small regular file lake.json of kind cualake), or "" if none does.
func outerLake(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		if holdsMarker(p) {
			return p
		}
		if filepath.Dir(p) == p {
			return ""
		}
	}
}

// holdsMarker says whether folder dir holds a cualake lake marker (an
// unrelated lake.json does not count).
func holdsMarker(dir string) bool { return outfile.IsLake(dir) }

// Storage returns the backend.
func (l *Lake) Storage() Storage { return l.store }

func (l *Lake) String() string { return l.store.String() }

// OnBranch returns a handle on the same lake whose default branch is name:
// "" and Head resolve to that branch's head, and every transaction begun
// on it commits to that branch (Begin). "" or "main" is main. The name
// must be a valid branch name (ValidateRefName); the branch need not exist
// yet, but reading or committing on a missing one fails.
func (l *Lake) OnBranch(name string) (*Lake, error) {
	if name != "" && name != MainRef {
		if err := ValidateRefName(name); err != nil {
			return nil, fmt.Errorf("branch: %w", err)
		}
	}
	if name == MainRef {
		name = ""
	}
	c := *l
	c.branch = name
	return &c, nil
}

// Branch names the handle's default branch ("main" unless OnBranch).
func (l *Lake) Branch() string {
	if l.branch == "" {
		return MainRef
	}
	return l.branch
}

// Head returns the snapshot id the handle's branch points at (main unless
// OnBranch): for main, "" for a lake that has no history yet,
// ErrDanglingHistory if main is missing although the lake holds a
// history; for another branch, ErrNotExist if it does not exist. A
// malformed ref is ErrCorrupt.
func (l *Lake) Head(ctx context.Context) (string, error) {
	return l.BranchHead(ctx, l.Branch())
}

// BranchHead returns the snapshot id branch name points at, as Head does
// for the handle's own branch.
func (l *Lake) BranchHead(ctx context.Context, name string) (string, error) {
	if name == "" || name == MainRef {
		id, err := l.readRef(ctx, mainKey)
		if errors.Is(err, ErrNotExist) {
			return l.checkNoHistory(ctx)
		}
		return id, err
	}
	id, err := l.readRef(ctx, headsDir+name)
	switch {
	case errors.Is(err, ErrNotExist):
		return "", fmt.Errorf("branch %s of lake %s: %w (create it with `cualake lake branch create %s`)", name, l, ErrNotExist, name)
	case errors.Is(err, errRefFolder):
		// a folder of branches (exp/tiny/a) is no branch, and not corrupt
		return "", fmt.Errorf("branch %s of lake %s: %w: there is no branch of that name, only branches under it: %s",
			name, l, ErrNotExist, strings.Join(l.refsUnder(ctx, headsDir, name), ", "))
	}
	return id, err
}

// refsUnder lists up to 10 ref names under the folder dir+name, for an
// error that says a name is only a folder of refs.
func (l *Lake) refsUnder(ctx context.Context, dir, name string) []string {
	keys, err := l.store.List(ctx, dir+name+"/")
	if err != nil || len(keys) == 0 {
		return []string{"(none listed)"}
	}
	sort.Strings(keys)
	var out []string
	for i, k := range keys {
		if i == 10 {
			out = append(out, fmt.Sprintf("and %d more", len(keys)-i))
			break
		}
		out = append(out, strings.TrimPrefix(k, dir))
	}
	return out
}

// Resolve turns a ref into a snapshot id: "" is the head of the handle's
// branch (main unless OnBranch), "main" the head of main; 4 to 64 hex
// digits are a snapshot id or an unambiguous id prefix of 6+ digits,
// never a name; any other name is a branch or a tag (ValidateRefName says
// which names are; a name that is both is refused as ambiguous).
func (l *Lake) Resolve(ctx context.Context, ref string) (string, error) {
	switch {
	case ref == "" || ref == MainRef:
		name := ref
		if name == "" {
			name = l.Branch()
		}
		id, err := l.BranchHead(ctx, name)
		if err == nil && id == "" {
			return "", fmt.Errorf("lake %s has no snapshot yet: %w", l, ErrNotExist)
		}
		return id, err
	case isHexName(ref):
		return l.resolveID(ctx, strings.ToLower(ref))
	}
	if err := ValidateRefName(ref); err != nil {
		return "", fmt.Errorf("%q is neither a branch, a tag nor a snapshot id of lake %s: %w", ref, l, err)
	}
	head, herr := l.readRef(ctx, headsDir+ref)
	tag, terr := l.readRef(ctx, tagsDir+ref)
	// A folder of refs (branches exp/tiny/a) is no ref of that name.
	var under []string
	if errors.Is(herr, errRefFolder) {
		under, herr = append(under, "branches "+strings.Join(l.refsUnder(ctx, headsDir, ref), ", ")), ErrNotExist
	}
	if errors.Is(terr, errRefFolder) {
		under, terr = append(under, "tags "+strings.Join(l.refsUnder(ctx, tagsDir, ref), ", ")), ErrNotExist
	}
	switch {
	case herr == nil && terr == nil:
		return "", fmt.Errorf("%q names both a branch (at %s) and a tag (at %s) of lake %s; delete one (`cualake lake branch delete %s`)", ref, short(head), short(tag), l, ref)
	case herr == nil:
		return head, nil
	case !errors.Is(herr, ErrNotExist):
		return "", herr
	case terr == nil:
		return tag, nil
	case !errors.Is(terr, ErrNotExist):
		return "", terr
	}
	if len(under) > 0 {
		return "", fmt.Errorf("%q is neither a branch, a tag nor a snapshot id of lake %s: %w; it is only a folder of refs: %s",
			ref, l, ErrNotExist, strings.Join(under, "; "))
	}
	return "", fmt.Errorf("%q is neither a branch, a tag nor a snapshot id of lake %s: %w", ref, l, ErrNotExist)
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
		// Only main may be empty (a new lake); a missing branch is an error,
		// as everywhere else.
		if errors.Is(err, ErrNotExist) && (ref == MainRef || ref == "" && l.Branch() == MainRef) {
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

// claimable checks that a valid name may become a ref under dir: it clashes
// with no folder of refs there (checkRefPath), and the other kind of ref
// (under otherDir) does not hold it, since a name is a branch or a tag,
// never both.
func (l *Lake) claimable(ctx context.Context, dir, otherDir, otherKind, name string) error {
	if err := l.checkRefPath(ctx, dir, name); err != nil {
		return err
	}
	// A folder of the other kind's refs is no ref of that name: a branch
	// deleted and created again finds its old run tags <name>/run/...
	if cur, err := l.readRef(ctx, otherDir+name); err == nil {
		return fmt.Errorf("a %s of that name exists (at %s); a name is a branch or a tag, never both: %w", otherKind, short(cur), ErrExist)
	} else if !errors.Is(err, ErrNotExist) && !errors.Is(err, errRefFolder) {
		return err
	}
	return nil
}

// Tag points name at a snapshot. Tags are immutable: re-tagging the same
// snapshot is a no-op, moving a tag is an error.
func (l *Lake) Tag(ctx context.Context, name, ref string) (string, error) {
	if err := ValidateRefName(name); err != nil {
		return "", fmt.Errorf("tag: %w", err)
	}
	if err := l.claimable(ctx, tagsDir, headsDir, "branch", name); err != nil {
		return "", fmt.Errorf("tag %s: %w", name, err)
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
