package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cualake/cualake/schemas"
)

// Txn collects the table changes of one commit. Data files are written as
// they are added; nothing is visible until Commit writes the manifest and
// moves the ref.
type Txn struct {
	lake    *Lake
	branch  string // the branch Commit moves: "main" or a refs/heads/ name
	parent  string // "" for the first snapshot
	base    *Manifest
	changes map[string]change
	// newHistory lets a parentless commit land on a lake whose main is
	// missing although it holds a history (ErrDanglingHistory).
	newHistory bool
	started    time.Time // Begin's wall time: the manifest's started_at
}

type change struct {
	replace bool
	files   []File
}

// BeginOption changes how Begin starts a transaction.
type BeginOption func(*Txn)

// NewHistory lets the transaction start a new root on a lake whose main
// ref is missing although it holds snapshots (a dangling history), which
// is otherwise refused so that a lost ref cannot silently fork the lake.
// The earlier snapshots stay in the lake, unreachable from main. On a lake
// with a main ref, or with no history, it changes nothing.
func NewHistory() BeginOption { return func(t *Txn) { t.newHistory = true } }

// newTxn is an empty transaction on the lake's branch, started now.
func (l *Lake) newTxn() *Txn {
	return &Txn{lake: l, branch: l.Branch(), changes: map[string]change{}, started: l.Now()}
}

// Begin starts a transaction on top of the snapshot ref names. The commit
// moves one branch: the handle's branch if it was set with OnBranch;
// otherwise the branch ref names when it is "main" or a branch name, and
// main for "", a tag or a snapshot id. "" starts from that branch's head (a
// lake with no history yet starts main from nothing). A corrupt ref, a
// missing branch, or a missing main on a lake that has a history, is an
// error.
func (l *Lake) Begin(ctx context.Context, ref string, opts ...BeginOption) (*Txn, error) {
	t := l.newTxn()
	for _, o := range opts {
		o(t)
	}
	if l.branch == "" && ref != "" && !isHexName(ref) {
		if ref == MainRef {
			t.branch = MainRef
		} else if _, err := l.readRef(ctx, headsDir+ref); err == nil {
			t.branch = ref
		}
	}
	if t.branch != MainRef {
		// The branch must exist, whatever the transaction starts from.
		if _, err := l.BranchHead(ctx, t.branch); err != nil {
			return nil, fmt.Errorf("begin on branch %s: %w", t.branch, err)
		}
	}
	from := ref
	if from == "" {
		from = t.branch
	}
	id, err := l.Resolve(ctx, from)
	onMain := t.branch == MainRef && (ref == "" || ref == MainRef)
	switch {
	case err == nil:
		m, err := l.Snapshot(ctx, id)
		if err != nil {
			return nil, err
		}
		t.parent, t.base = id, m
	case onMain && (errors.Is(err, ErrNotExist) || t.newHistory && errors.Is(err, ErrDanglingHistory)):
		t.base = &Manifest{Tables: map[string]TableFiles{}}
	default:
		return nil, err
	}
	return t, nil
}

// Branch is the branch this transaction's commit moves.
func (t *Txn) Branch() string { return t.branch }

// Parent is the snapshot this transaction builds on ("" for none).
func (t *Txn) Parent() string { return t.parent }

// Base is the parent's manifest (empty tables for a new lake).
func (t *Txn) Base() *Manifest { return t.base }

// Replace makes files the whole content of table in the new snapshot.
func (t *Txn) Replace(table string, files []File) error {
	if _, ok := schemas.Lookup(table); !ok {
		return fmt.Errorf("replace %s: not a known table", table)
	}
	t.changes[table] = change{replace: true, files: files}
	return nil
}

// Append adds files to table, keeping the parent's files.
func (t *Txn) Append(table string, files []File) error {
	if _, ok := schemas.Lookup(table); !ok {
		return fmt.Errorf("append %s: not a known table", table)
	}
	c := t.changes[table]
	c.files = append(c.files, files...)
	t.changes[table] = c
	return nil
}

// CommitInfo says what produced a snapshot.
type CommitInfo struct {
	Stage   string
	Params  any // marshalled to JSON; nil is {}
	Seed    int64
	Inputs  []string
	Message string
}

// maxRebases bounds how often a commit is re-applied on a moved head.
const maxRebases = 16

// Commit writes the manifest and moves the transaction's branch (main
// unless Begin chose another; no other ref moves). If it moved since Begin and
// the tables changed meanwhile are disjoint from this commit's, it rebases
// onto the new head; so it does where both only appended disjoint keys to
// a content-addressed table (blobs; see commute.go). Otherwise it fails
// with ErrConflict. Committing a
// snapshot whose tables equal its parent's is a no-op that returns the
// parent, so re-running a stage that changes nothing adds no history.
//
// The branch is read and parsed before anything is written: a corrupt ref fails
// at once (ErrCorrupt) and a moved one is rebased onto, neither leaving a
// manifest behind; the compare-and-swap then only guards the short window
// between that read and the swap. A branch deleted meanwhile fails with
// ErrNotExist. A parentless commit (only main has them) is refused with
// ErrDanglingHistory where main is missing but the lake holds a history,
// unless the transaction was begun with NewHistory. A data file the new
// snapshot would reference that is missing or not the size its manifest
// records fails the commit with ErrCorrupt naming the file, so a stage
// does not carry a damaged table forward unnoticed (`lake verify` checks
// the contents too).
func (t *Txn) Commit(ctx context.Context, info CommitInfo) (*Manifest, error) {
	params := json.RawMessage("{}")
	if info.Params != nil {
		b, err := json.Marshal(info.Params)
		if err != nil {
			return nil, fmt.Errorf("commit %s: params: %w", info.Stage, err)
		}
		params = b
	}
	inputs := append([]string{}, info.Inputs...)
	if inputs == nil {
		inputs = []string{}
	}
	key := headsDir + t.branch
	parent, base := t.parent, t.base
	checked := map[string]bool{} // files whose size checkSizes found right
	for attempt := 0; ; attempt++ {
		m := t.build(parent, base, info, params, inputs)
		id, err := m.ContentHash()
		if err != nil {
			return nil, err
		}
		m.ID = id
		if parent != "" && sameTables(m, base) {
			return base, nil // the data did not change: no new snapshot
		}
		// Before the branch is read, to keep the window before the swap
		// short; after a rebase only the head's new files are checked.
		if err := t.lake.checkSizes(ctx, m, checked); err != nil {
			return nil, fmt.Errorf("commit %s: %w", info.Stage, err)
		}
		head, err := t.lake.readRef(ctx, key)
		switch {
		case errors.Is(err, ErrNotExist) && t.branch != MainRef:
			return nil, fmt.Errorf("commit %s on branch %s: %w: %s was deleted since the transaction began", info.Stage, t.branch, ErrNotExist, key)
		case errors.Is(err, ErrNotExist):
			if parent != "" {
				return nil, fmt.Errorf("commit %s on %s: %w: %s is missing; restore it or begin a new history", info.Stage, short(parent), ErrDanglingHistory, mainKey)
			}
			head = ""
			if !t.newHistory {
				if head, err = t.lake.checkNoHistory(ctx); err != nil {
					return nil, fmt.Errorf("commit %s: %w", info.Stage, err)
				}
			}
		case err != nil:
			return nil, fmt.Errorf("commit %s: %w", info.Stage, err)
		}
		if head != parent {
			if head == id {
				return t.lake.Snapshot(ctx, id) // someone committed the very same snapshot
			}
			if attempt >= maxRebases {
				return nil, fmt.Errorf("commit %s: %w: %s kept moving (%d attempts)", info.Stage, ErrConflict, t.branch, attempt+1)
			}
			headM, err := t.lake.Snapshot(ctx, head)
			if err != nil {
				return nil, fmt.Errorf("commit %s: %s moved to %s: %w", info.Stage, t.branch, short(head), err)
			}
			clash, err := t.stillClashing(ctx, base, headM, t.overlap(ctx, parent, headM))
			if err != nil {
				return nil, fmt.Errorf("commit %s: rebase onto %s: %w", info.Stage, short(head), err)
			}
			if len(clash) > 0 {
				return nil, fmt.Errorf("commit %s on %s: %w: %s moved to %s, which also changed table(s) %s; re-run the stage on the new head",
					info.Stage, short(parent), ErrConflict, t.branch, short(head), strings.Join(clash, ", "))
			}
			parent, base = head, headM
			continue
		}
		m.CommittedAt = t.lake.Now().UTC().Format(time.RFC3339)
		m.StartedAt = t.started.UTC().Format(time.RFC3339)
		body, err := m.Encode()
		if err != nil {
			return nil, err
		}
		if err := t.lake.store.PutIfAbsent(ctx, snapshotKey(id), body); err != nil && !errors.Is(err, ErrExist) {
			return nil, fmt.Errorf("commit %s: write manifest: %w", info.Stage, err)
		}
		var prev []byte
		if parent != "" {
			prev = formatRef(parent)
		}
		err = t.lake.store.CompareAndSwap(ctx, key, prev, formatRef(id))
		if err == nil {
			if parent == "" {
				if err := t.lake.recordRoot(ctx, id); err != nil {
					return nil, fmt.Errorf("commit %s: snapshot %s is committed and main points at it, but: %w", info.Stage, id, err)
				}
			}
			return m, nil
		}
		if !errors.Is(err, ErrConflict) {
			return nil, fmt.Errorf("commit %s: move %s: %w", info.Stage, t.branch, err)
		}
		if attempt >= maxRebases {
			return nil, fmt.Errorf("commit %s: %w: %s kept moving (%d attempts)", info.Stage, ErrConflict, t.branch, attempt+1)
		}
		// Another writer moved the branch between the read and the swap: read it
		// again at the top of the loop.
	}
}

// StartNewHistory commits an empty root snapshot (stage "init") and points
// main at it, on a lake whose main is missing although it holds a history.
// The earlier snapshots stay in the lake, unreachable from main, and gc
// keeps their files. It refuses a lake whose main exists.
func (l *Lake) StartNewHistory(ctx context.Context) (*Manifest, error) {
	if id, err := l.readRef(ctx, mainKey); err == nil {
		return nil, fmt.Errorf("lake %s: main is at %s; a new history starts only where main is missing", l, short(id))
	} else if !errors.Is(err, ErrNotExist) {
		return nil, err
	}
	onMain := *l
	onMain.branch = ""
	tx, err := onMain.Begin(ctx, MainRef, NewHistory())
	if err != nil {
		return nil, err
	}
	if tx.Parent() != "" {
		return nil, fmt.Errorf("lake %s: main appeared at %s meanwhile; nothing to start", l, short(tx.Parent()))
	}
	return tx.Commit(ctx, CommitInfo{Stage: "init", Message: "new history: main was missing; earlier snapshots are unreachable from main"})
}

// recordRoot writes refs/roots/<id> once main first points at a parentless
// snapshot. It is what tells a lake that lost its main (a dangling
// history) from one whose first commit crashed before main existed.
func (l *Lake) recordRoot(ctx context.Context, id string) error {
	err := l.store.PutIfAbsent(ctx, rootsDir+id, formatRef(id))
	if err != nil && !errors.Is(err, ErrExist) {
		return fmt.Errorf("record root %s%s: %w", rootsDir, id, err)
	}
	return nil
}

// build applies the transaction's changes to base.
func (t *Txn) build(parent string, base *Manifest, info CommitInfo, params json.RawMessage, inputs []string) *Manifest {
	m := &Manifest{Format: FormatVersion, Parent: parent, Stage: info.Stage, Params: params, Seed: info.Seed,
		Inputs: inputs, CodeVersion: CodeVersion, Message: info.Message, Tables: map[string]TableFiles{}, Changed: []string{}}
	for n, tf := range base.Tables {
		m.Tables[n] = tf
	}
	for name, c := range t.changes {
		info, _ := schemas.Lookup(name)
		tf := TableFiles{SchemaVersion: info.Version, PartitionColumns: []string{}}
		if !c.replace {
			tf.Files = append(tf.Files, m.Tables[name].Files...)
		}
		tf.Files = append(tf.Files, c.files...)
		if tf.Files == nil {
			tf.Files = []File{}
		}
		for _, f := range tf.Files {
			tf.Rows += f.Rows
		}
		m.Tables[name] = tf
		m.Changed = append(m.Changed, name)
	}
	sort.Strings(m.Changed)
	return m
}

// overlap returns the tables this transaction touches that also changed
// between parent and head.
func (t *Txn) overlap(ctx context.Context, parent string, head *Manifest) []string {
	changedSince := map[string]bool{}
	for id := head.ID; id != parent && id != ""; {
		m, err := t.lake.Snapshot(ctx, id)
		if err != nil {
			for n := range t.changes { // cannot tell: treat everything as conflicting
				changedSince[n] = true
			}
			break
		}
		for _, n := range m.Changed {
			changedSince[n] = true
		}
		id = m.Parent
	}
	var clash []string
	for n := range t.changes {
		if changedSince[n] {
			clash = append(clash, n)
		}
	}
	sort.Strings(clash)
	return clash
}

// ShortID is a snapshot id as the lake's messages print it: its first 12
// characters.
func ShortID(id string) string { return short(id) }

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	if id == "" {
		return "(empty lake)"
	}
	return id
}

func sameTables(a, b *Manifest) bool {
	if len(a.Tables) != len(b.Tables) {
		return false
	}
	for n, ta := range a.Tables {
		tb, ok := b.Tables[n]
		if !ok || ta.SchemaVersion != tb.SchemaVersion || ta.Rows != tb.Rows || len(ta.Files) != len(tb.Files) {
			return false
		}
		for i := range ta.Files {
			if ta.Files[i] != tb.Files[i] {
				return false
			}
		}
	}
	return true
}

// checkSizes checks that every data file m references exists with the size
// its manifest records, skipping those in checked and adding the ones it
// passes. Sizes are read by a few workers at once, for object stores; the
// cost is one stat (or HEAD) per file of the snapshot, per commit.
func (l *Lake) checkSizes(ctx context.Context, m *Manifest, checked map[string]bool) error {
	var todo []File
	var tables []string
	for _, name := range m.TableNames() {
		for _, f := range m.Tables[name].Files {
			if !checked[f.Path] {
				todo = append(todo, f)
				tables = append(tables, name)
			}
		}
	}
	errs := make([]error, len(todo))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(8, len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f := todo[i]
				n, err := l.store.Size(ctx, f.Path)
				switch {
				case errors.Is(err, ErrNotExist):
					errs[i] = fmt.Errorf("%w: table %s: file %s is missing; run `cualake lake verify`", ErrCorrupt, tables[i], f.Path)
				case err != nil:
					errs[i] = fmt.Errorf("table %s: file %s: %w", tables[i], f.Path, err)
				case n != f.Bytes:
					errs[i] = fmt.Errorf("%w: table %s: file %s is %d bytes, its manifest says %d; run `cualake lake verify`", ErrCorrupt, tables[i], f.Path, n, f.Bytes)
				}
			}
		}()
	}
	for i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err // a cancelled check names no file: none was found damaged
	}
	for i, err := range errs {
		if err != nil {
			return err
		}
		checked[todo[i].Path] = true
	}
	return nil
}
