package lake

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"syscall"
)

// Ref layout (docs/lake-format.md). Heads and tags share one name
// validator and one parser; refs/roots/ records where histories began.
const (
	headsDir = "refs/heads/"
	tagsDir  = "refs/tags/"
	rootsDir = "refs/roots/"
	mainKey  = headsDir + MainRef
	// maxRefName bounds a ref name in bytes.
	maxRefName = 128
)

var (
	// ErrInvalidRefName: a tag or branch name breaks the naming rules
	// (ValidateRefName); the error says which.
	ErrInvalidRefName = errors.New("invalid ref name")
	// ErrDanglingHistory: the lake holds a history but refs/heads/main is
	// missing. Committing would start a second, unrelated root, so it is
	// refused unless the transaction asks for NewHistory.
	ErrDanglingHistory = errors.New("dangling history")
)

// ParseRef parses the bytes of the ref object at key. A ref is exactly a
// 64-digit lowercase hex snapshot id followed by one "\n"; anything else
// (empty, whitespace, CRLF, no newline, more lines) is ErrCorrupt, with
// key and what is wrong in the message.
func ParseRef(key string, b []byte) (string, error) {
	if len(b) == 65 && b[64] == '\n' && idPattern.Match(b[:64]) {
		return string(b[:64]), nil
	}
	return "", fmt.Errorf("ref %s: %w: %s (a ref is 64 lowercase hex digits and one \\n)", key, ErrCorrupt, refProblem(b))
}

// refProblem says in words why b is not a ref.
func refProblem(b []byte) string {
	s := string(b)
	body := strings.TrimSuffix(s, "\n")
	switch {
	case len(b) == 0:
		return "it is empty"
	case strings.TrimSpace(s) == "":
		return fmt.Sprintf("it holds only whitespace %q", s)
	case strings.HasSuffix(s, "\r\n"):
		return `it ends in CRLF (\r\n)`
	case !strings.HasSuffix(s, "\n"):
		return "it has no trailing newline"
	case strings.Contains(body, "\n"):
		return fmt.Sprintf("it holds %d lines", strings.Count(s, "\n"))
	case strings.TrimSpace(body) != body:
		return "it has whitespace around the id"
	case len(body) == 64 && strings.ToLower(body) != body:
		return "its id is not lowercase"
	}
	if len(body) > 80 {
		body = body[:80] + "..."
	}
	return fmt.Sprintf("it holds %q, not a 64-hex snapshot id", body)
}

func formatRef(id string) []byte { return []byte(id + "\n") }

// errRefFolder marks readRef's error for a key that is a folder of other
// refs (tags <branch>/run/... under a branch's name): no ref of that name.
var errRefFolder = folderError{}

type folderError struct{}

func (folderError) Error() string { return "" }

// readRef reads and parses the ref at key: ErrNotExist if there is none,
// ErrCorrupt if it is malformed (or a directory).
func (l *Lake) readRef(ctx context.Context, key string) (string, error) {
	b, err := l.store.Get(ctx, key)
	switch {
	case errors.Is(err, ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		// ENOTDIR: a folder of the key is a ref file (tag a/b beside branch
		// a), so no ref lies there.
		return "", fmt.Errorf("ref %s: %w", key, ErrNotExist)
	case errors.Is(err, syscall.EISDIR):
		return "", fmt.Errorf("ref %s: %w: it is a directory, not a file%w", key, ErrCorrupt, errRefFolder)
	case err != nil:
		return "", fmt.Errorf("read ref %s: %w", key, err)
	}
	return ParseRef(key, b)
}

// ValidateRefName checks a tag name (and, later, a branch name); every
// command that creates or resolves a named ref goes through it. Allowed:
// letters, digits, '.', '_', '-' and '/' between non-empty components, at
// most 128 bytes, starting with a letter or digit. Refused, each with its
// reason: main; "..", components that start with '.', empty components;
// components ending in ".lock" or containing ".tmp-" (the names of lock
// and temporary files); 4 to 64 hex digits (they would read as a snapshot
// id prefix); spaces, control characters and anything else.
func ValidateRefName(name string) error {
	if why := refNameProblem(name); why != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidRefName, name, why)
	}
	return nil
}

func refNameProblem(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case len(name) > maxRefName:
		return fmt.Sprintf("it is longer than %d bytes", maxRefName)
	case name == MainRef:
		return "main is the main branch"
	case isHexName(name):
		return fmt.Sprintf("%d hex digits would shadow snapshot ids starting so; add a letter such as v", len(name))
	}
	for _, r := range name {
		switch {
		case r == ' ':
			return "it contains a space"
		case r < 0x20 || r == 0x7f:
			return fmt.Sprintf("it contains control character %q", r)
		case !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/", r)):
			return fmt.Sprintf("it contains %q; use letters, digits, '.', '_', '-' and '/'", r)
		}
	}
	if strings.Contains(name, "..") {
		return "it contains '..'"
	}
	for _, c := range strings.Split(name, "/") {
		switch {
		case c == "":
			return "it has an empty path component (a leading, trailing or doubled '/')"
		case c[0] == '.':
			return fmt.Sprintf("component %q starts with '.'", c)
		case strings.HasSuffix(c, ".lock"):
			return fmt.Sprintf("component %q ends in .lock, which names lock files", c)
		case strings.Contains(c, tmpMarker):
			return fmt.Sprintf("component %q contains %s, which marks temporary files", c, tmpMarker)
		}
	}
	if c := name[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
		return "names start with a letter or digit"
	}
	return ""
}

// isHexName reports whether name is 4 to 64 hex digits, which Resolve reads
// as a snapshot id or id prefix, never as a tag.
func isHexName(name string) bool {
	if len(name) < 4 || len(name) > 64 {
		return false
	}
	for _, c := range name {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// refs reads every ref under refs/ (heads, tags, roots): key -> id. A
// corrupt ref is an error.
func (l *Lake) refs(ctx context.Context) (map[string]string, error) {
	keys, err := l.store.List(ctx, "refs/")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range keys {
		id, err := l.readRef(ctx, k)
		if err != nil {
			return nil, err
		}
		out[k] = id
	}
	return out, nil
}

// historyEvidence says what shows that this lake once had a main ref ("" if
// nothing does): any ref besides main (a root record, a tag, another head),
// or a snapshot with a parent, or one that cannot be read. A parentless
// manifest alone is what a crash in a lake's very first commit leaves
// behind, before main or the root record exist: no history yet.
func (l *Lake) historyEvidence(ctx context.Context) (string, error) {
	keys, err := l.store.List(ctx, "refs/")
	if err != nil {
		return "", err
	}
	for _, k := range keys {
		if k != mainKey {
			return k + " exists", nil
		}
	}
	ids, err := l.Snapshots(ctx)
	if err != nil {
		return "", err
	}
	for _, id := range ids {
		m, err := l.Snapshot(ctx, id)
		if err != nil {
			return fmt.Sprintf("snapshot %s is unreadable (%v)", short(id), err), nil
		}
		if m.Parent != "" {
			return fmt.Sprintf("snapshot %s has parent %s", short(id), short(m.Parent)), nil
		}
	}
	return "", nil
}

// checkNoHistory is called when main was read as missing. It returns ("",
// nil) for a lake that never had a history, and ErrDanglingHistory for one
// that has; unless main exists by now (a concurrent first commit landed
// after that read, and its root record is the history found), in which
// case it returns main's id.
func (l *Lake) checkNoHistory(ctx context.Context) (string, error) {
	ev, err := l.historyEvidence(ctx)
	if err != nil {
		return "", err
	}
	if ev == "" {
		return "", nil
	}
	id, err := l.readRef(ctx, mainKey)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, ErrNotExist) {
		return "", err
	}
	return "", fmt.Errorf("lake %s: %w: %s is missing, but the lake holds a history (%s); restore main to its newest snapshot (`cualake lake verify` names the candidates) or pass --new-history to start an unrelated root",
		l, ErrDanglingHistory, mainKey, ev)
}

// leaves returns the snapshots no other snapshot names as parent, newest
// first: the candidates for a lost head.
func leaves(ms []*Manifest) []*Manifest {
	parents := map[string]bool{}
	for _, m := range ms {
		parents[m.Parent] = true
	}
	var out []*Manifest
	for _, m := range ms {
		if !parents[m.ID] {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CommittedAt != out[j].CommittedAt {
			return out[i].CommittedAt > out[j].CommittedAt
		}
		return out[i].ID < out[j].ID
	})
	return out
}
