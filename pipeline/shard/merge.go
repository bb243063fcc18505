package shard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// WholeInput lists the stages that need their whole input and therefore
// cannot be sharded, with the reason.
var WholeInput = map[string]string{
	"sample": "it ranks every task of the pool against the others (EMA pass rates, frontier weights)",
	"train":  "one optimiser sees every batch in order; shard the rollouts that feed it instead",
}

// CheckShardable returns an error for a sharded run of a whole-input stage.
func CheckShardable(stage string, s Spec) error {
	if why, ok := WholeInput[stage]; ok && s.Sharded() {
		return fmt.Errorf("%s cannot be sharded: %s; run it once, without --shard", stage, why)
	}
	return nil
}

// StageMerge is a stage's own way of merging its fragments, for a stage
// whose committed rows are not simply the union of its shards' rows: ids
// assigned in order, duplicates resolved in input order, totals over every
// key. Stage commands register it (RegisterStageMerge) in their init.
type StageMerge struct {
	// Finish, when set, replaces the union of the shards' rows: it reads the
	// checked fragments and adds the run's final rows to in.Out, an
	// unsharded Output on the input snapshot, exactly as the stage's
	// unsharded run adds them (so the files are the same); Merge then
	// commits in.Out with the run's CommitInfo. Returning false commits
	// nothing, where the unsharded run would not have committed either.
	Finish func(ctx context.Context, in *MergeInput) (commit bool, err error)
	// SkipEmpty commits nothing when no table gains or replaces a row, as the
	// stage's unsharded run does (an import of records the lake holds).
	SkipEmpty bool
	// Check, when set, refuses a merge that the stage's unsharded run would
	// have refused, for a reason no single shard can see (every episode of
	// a rollout in error): it reads the checked fragments before anything
	// is written, and its error is the merge's (nothing committed).
	Check func(ctx context.Context, in *MergeInput) error
}

// MergeInput is what a StageMerge's Finish works with.
type MergeInput struct {
	Lake      *lake.Lake
	Base      *lake.Manifest // the input snapshot (no tables for an empty lake)
	Fragments []*Fragment    // shard 0 to N-1, checked to belong to one run
	Out       *Output        // where the final rows go (nil for Check)
}

var stageMerges = map[string]StageMerge{}

// RegisterStageMerge installs stage's own merge.
func RegisterStageMerge(stage string, m StageMerge) { stageMerges[stage] = m }

// ReadFragmentRows reads one table of the fragments, shard by shard and file
// by file (each shard's rows in the table's order).
func ReadFragmentRows[T any](ctx context.Context, l *lake.Lake, frags []*Fragment, def *schemas.Table[T]) ([]T, error) {
	var out []T
	for _, f := range frags {
		t, ok := f.Tables[def.Name]
		if !ok {
			continue
		}
		m := &lake.Manifest{ID: f.Key(), Tables: map[string]lake.TableFiles{def.Name: {Rows: t.Rows, Files: t.Files}}}
		rows, err := lake.ReadTable(ctx, l, m, def)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// mergeFunc merges sorted sources of one table into its final files. Each
// source is one shard's files of the table, in order: one sorted sequence,
// which the merge reads one file at a time.
type mergeFunc func(ctx context.Context, l *lake.Lake, srcs [][]lake.File, opt TableOptions) ([]lake.File, error)

var mergers = map[string]mergeFunc{}

func registerTable[T any](def *schemas.Table[T]) {
	mergers[def.Name] = func(ctx context.Context, l *lake.Lake, srcs [][]lake.File, opt TableOptions) ([]lake.File, error) {
		w := lake.NewSortedWriter(l, def, opt.Chunk, opt.Dedup)
		for _, files := range srcs {
			w.AddSortedSeq(files)
		}
		return w.Finish(ctx, lake.DataSink(l, def))
	}
}

func init() {
	// Every table of schemas; TestEveryTableMerges catches one missing here.
	registerTable(schemas.Tasks)
	registerTable(schemas.SynthesisRecords)
	registerTable(schemas.Trajectories)
	registerTable(schemas.Steps)
	registerTable(schemas.Blobs)
	registerTable(schemas.Segments)
	registerTable(schemas.PassRates)
	registerTable(schemas.Batches)
	registerTable(schemas.Verifications)
	registerTable(schemas.TrainMetrics)
	registerTable(schemas.Checkpoints)
	registerTable(schemas.Audits)
	registerTable(schemas.Rejects)
	registerTable(schemas.SamplerSims)
	registerTable(schemas.ExperimentRuns)
	registerTable(schemas.ExperimentResults)
	registerTable(schemas.ReplayBuffer)
	registerTable(schemas.TrainGroups)
}

// MergeOptions select the fragments to merge.
type MergeOptions struct {
	Stage string
	// Input is the snapshot the shards read: an id, tag or "main" ("" is
	// main's head); "empty" for shards that ran on an empty lake.
	Input string
	// Params picks the run by (a prefix of) its parameters hash when
	// fragments of several runs share the input.
	Params string
	// Shards is N; 0 accepts the only N present.
	Shards int
	// Clean removes the merged fragments after the commit.
	Clean bool
}

// MergeResult reports a merge.
type MergeResult struct {
	Manifest *lake.Manifest   `json:"-"`
	Snapshot string           `json:"snapshot"`
	Set      SetInfo          `json:"set"`
	Shards   int              `json:"shards"`
	Rows     map[string]int64 `json:"rows"`
	Removed  int              `json:"removed,omitempty"`
}

// ErrIncomplete marks fragments that cannot be merged (missing, duplicated,
// or from a different input or parameters).
var ErrIncomplete = errors.New("fragments cannot be merged")

// Merge commits the N fragments of one run as one snapshot: the snapshot an
// unsharded run of the stage on the same input, parameters and seed
// commits. It refuses when a shard is missing or duplicated, or when a
// fragment was built from another input or other parameters.
func Merge(ctx context.Context, l *lake.Lake, opt MergeOptions) (*MergeResult, error) {
	input, err := resolveInput(ctx, l, opt.Input)
	if err != nil {
		return nil, err
	}
	set, n, err := pickSet(ctx, l, opt, input)
	if err != nil {
		return nil, err
	}
	frags := make([]*Fragment, n)
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%sshard-%d-of-%d.json", set.Dir, i, n)
		f, err := readFragment(ctx, l, key)
		if err != nil {
			return nil, err
		}
		if err := checkFragment(f, key, opt.Stage, input, set.ParamsHash, i, n); err != nil {
			return nil, err
		}
		frags[i] = f
	}
	first := frags[0]
	names := make([]string, 0, len(first.Tables))
	for name := range first.Tables {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, f := range frags[1:] {
		if len(f.Tables) != len(first.Tables) {
			return nil, fmt.Errorf("%w: shard %d writes tables %v, shard 0 writes %v", ErrIncomplete, f.Shard, tableNames(f), names)
		}
		for _, name := range names {
			t, ok := f.Tables[name]
			if !ok || t.TableOptions != first.Tables[name].TableOptions {
				return nil, fmt.Errorf("%w: shard %d and shard 0 disagree about table %s", ErrIncomplete, f.Shard, name)
			}
		}
	}
	tx, err := l.BeginFrom(ctx, input)
	if err != nil {
		return nil, fmt.Errorf("merge %s: input %s: %w", opt.Stage, short(input), err)
	}
	res := &MergeResult{Set: set, Shards: n, Rows: map[string]int64{}}
	custom := stageMerges[opt.Stage]
	if custom.Check != nil {
		if err := custom.Check(ctx, &MergeInput{Lake: l, Base: tx.Base(), Fragments: frags}); err != nil {
			return nil, fmt.Errorf("merge %s: %w", opt.Stage, err)
		}
	}
	if custom.Finish != nil {
		return finishCustom(ctx, l, opt, custom, tx, frags, res)
	}
	changed := false
	for _, name := range names {
		opts := first.Tables[name].TableOptions
		merge, ok := mergers[name]
		if !ok {
			return nil, fmt.Errorf("merge %s: table %s is not a known table", opt.Stage, name)
		}
		var srcs [][]lake.File
		var rows int64
		if opts.Shared {
			for _, f := range frags[1:] {
				if !sameFiles(f.Tables[name].Files, first.Tables[name].Files) {
					return nil, fmt.Errorf("%w: table %s should be the same in every shard, but shard %d differs from shard 0 (did the input change?)",
						ErrIncomplete, name, f.Shard)
				}
			}
			srcs, rows = [][]lake.File{first.Tables[name].Files}, first.Tables[name].Rows
		} else {
			for _, f := range frags {
				srcs = append(srcs, f.Tables[name].Files)
				rows += f.Tables[name].Rows
			}
		}
		if !opts.Replace && rows == 0 {
			continue // as unsharded: appending nothing changes nothing
		}
		files, err := merge(ctx, l, srcs, opts)
		if err != nil {
			if strings.Contains(err.Error(), "duplicate key") {
				return nil, fmt.Errorf("%w: table %s: %v: two shards processed the same key", ErrIncomplete, name, err)
			}
			return nil, fmt.Errorf("merge %s: table %s: %w", opt.Stage, name, err)
		}
		for _, f := range files {
			res.Rows[name] += f.Rows
		}
		changed = true
		if opts.Replace {
			err = tx.Replace(name, files)
		} else {
			err = tx.Append(name, files)
		}
		if err != nil {
			return nil, err
		}
	}
	if custom.SkipEmpty && !changed {
		// As the unsharded run: nothing new, no snapshot.
		res.Snapshot = input
		return res, cleanSet(ctx, l, opt, res)
	}
	m, err := tx.Commit(ctx, first.Commit.Info())
	if err != nil {
		return nil, fmt.Errorf("merge %s: %w", opt.Stage, err)
	}
	res.Manifest, res.Snapshot = m, m.ID
	return res, cleanSet(ctx, l, opt, res)
}

// finishCustom merges through a stage's own Finish.
func finishCustom(ctx context.Context, l *lake.Lake, opt MergeOptions, custom StageMerge, tx *lake.Txn, frags []*Fragment, res *MergeResult) (*MergeResult, error) {
	out := NewOutput(l, tx, Spec{})
	defer out.Discard()
	commit, err := custom.Finish(ctx, &MergeInput{Lake: l, Base: tx.Base(), Fragments: frags, Out: out})
	if err != nil {
		return nil, fmt.Errorf("merge %s: %w", opt.Stage, err)
	}
	if !commit {
		res.Snapshot = tx.Parent()
		return res, cleanSet(ctx, l, opt, res)
	}
	for _, t := range out.tables {
		if t.options().Replace || t.rows() > 0 {
			res.Rows[t.name()] = t.rows()
		}
	}
	r, err := out.Finish(ctx, frags[0].Commit.Info())
	if err != nil {
		return nil, fmt.Errorf("merge %s: %w", opt.Stage, err)
	}
	res.Manifest, res.Snapshot = r.Manifest, r.Manifest.ID
	return res, cleanSet(ctx, l, opt, res)
}

func cleanSet(ctx context.Context, l *lake.Lake, opt MergeOptions, res *MergeResult) error {
	if !opt.Clean {
		return nil
	}
	var err error
	res.Removed, err = RemoveSet(ctx, l, res.Set.Dir)
	return err
}

// RemoveSet deletes every object of a fragment set and returns how many.
func RemoveSet(ctx context.Context, l *lake.Lake, dir string) (int, error) {
	if !strings.HasPrefix(dir, FragmentsDir) || strings.Count(dir, "/") != 4 {
		return 0, fmt.Errorf("%s is not a fragment set folder", dir)
	}
	keys, err := l.Storage().List(ctx, dir)
	if err != nil {
		return 0, err
	}
	for _, k := range keys {
		if err := l.Storage().Delete(ctx, k); err != nil {
			return 0, fmt.Errorf("remove fragments: %w", err)
		}
	}
	return len(keys), nil
}

func resolveInput(ctx context.Context, l *lake.Lake, ref string) (string, error) {
	switch ref {
	case emptyInput:
		return "", nil
	case "", lake.MainRef:
		return l.Head(ctx)
	}
	return l.Resolve(ctx, ref)
}

// pickSet finds the one fragment set (and N) the options name.
func pickSet(ctx context.Context, l *lake.Lake, opt MergeOptions, input string) (SetInfo, int, error) {
	if !stageName.MatchString(opt.Stage) {
		return SetInfo{}, 0, fmt.Errorf("merge: stage %q: want a stage name such as rollout", opt.Stage)
	}
	all, err := List(ctx, l, opt.Stage)
	if err != nil {
		return SetInfo{}, 0, err
	}
	var cands, others []SetInfo
	for _, s := range all {
		if s.Input != input {
			others = append(others, s)
			continue
		}
		if opt.Params != "" && !strings.HasPrefix(s.ParamsHash, opt.Params) {
			continue
		}
		if opt.Shards > 0 && s.Shards[opt.Shards] == nil {
			others = append(others, s)
			continue
		}
		cands = append(cands, s)
	}
	in := input
	if in == "" {
		in = "(empty lake)"
	}
	switch {
	case len(cands) == 0:
		msg := fmt.Sprintf("%v: no fragments of stage %s on input %s", ErrIncomplete, opt.Stage, short(in))
		if opt.Shards > 0 {
			msg += fmt.Sprintf(" with %d shards", opt.Shards)
		}
		if opt.Params != "" {
			msg += " and params " + opt.Params
		}
		if len(others) > 0 {
			var d []string
			for _, s := range others {
				d = append(d, s.Describe())
			}
			msg += "; the lake holds: " + strings.Join(d, "; ")
		}
		return SetInfo{}, 0, errors.New(msg)
	case len(cands) > 1:
		var d []string
		for _, s := range cands {
			d = append(d, s.Describe())
		}
		return SetInfo{}, 0, fmt.Errorf("%w: fragments of %d runs of %s with different parameters share input %s (%s); pick one with --params HASH",
			ErrIncomplete, len(cands), opt.Stage, short(in), strings.Join(d, "; "))
	}
	set := cands[0]
	n := opt.Shards
	if n == 0 {
		if len(set.Shards) > 1 {
			return SetInfo{}, 0, fmt.Errorf("%w: %s: fragments of several shard counts; pick one with --shards N", ErrIncomplete, set.Describe())
		}
		for k := range set.Shards {
			n = k
		}
	}
	present := map[int]bool{}
	for _, i := range set.Shards[n] {
		present[i] = true
	}
	var missing []string
	for i := 0; i < n; i++ {
		if !present[i] {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	if len(missing) > 0 {
		return SetInfo{}, 0, fmt.Errorf("%w: %s: shard(s) %s of %d missing; run them (--shard I/%d) and merge again",
			ErrIncomplete, set.Describe(), strings.Join(missing, ", "), n, n)
	}
	return set, n, nil
}

func checkFragment(f *Fragment, key, stage, input, hash string, i, n int) error {
	switch {
	case f.Shard != i || f.Of != n:
		return fmt.Errorf("%w: %s holds shard %d of %d: a duplicated or misplaced fragment", ErrIncomplete, key, f.Shard, f.Of)
	case f.Stage != stage || f.Commit.Stage != stage:
		return fmt.Errorf("%w: %s was written by stage %s, not %s", ErrIncomplete, key, f.Stage, stage)
	case f.Input != input:
		return fmt.Errorf("%w: %s was built from input snapshot %s, not %s", ErrIncomplete, key, short(f.Input), short(input))
	case f.Commit.CodeVersion != lake.CodeVersion:
		return fmt.Errorf("%w: %s was written by %s, this is %s", ErrIncomplete, key, f.Commit.CodeVersion, lake.CodeVersion)
	}
	h, err := f.Commit.Hash()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrIncomplete, key, err)
	}
	if h != hash || f.ParamsHash != hash {
		return fmt.Errorf("%w: %s was built with different parameters (hash %s, its folder says %s)", ErrIncomplete, key, h, hash)
	}
	for name, t := range f.Tables {
		var rows int64
		for _, fl := range t.Files {
			rows += fl.Rows
			if !strings.HasPrefix(fl.Path, SetDir(stage, input, hash)) {
				return fmt.Errorf("%w: %s: table %s names a file outside its folder: %s", ErrIncomplete, key, name, fl.Path)
			}
		}
		if rows != t.Rows {
			return fmt.Errorf("%w: %s: table %s: files hold %d rows, the fragment says %d", lake.ErrCorrupt, key, name, rows, t.Rows)
		}
	}
	return nil
}

func sameFiles(a, b []lake.File) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].SHA256 != b[i].SHA256 || a[i].Rows != b[i].Rows {
			return false
		}
	}
	return true
}

func tableNames(f *Fragment) []string {
	out := make([]string, 0, len(f.Tables))
	for n := range f.Tables {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
