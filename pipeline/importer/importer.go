// Package importer brings data users already have into a lake: OSWorld task
// definitions, OSWorld run folders and generic JSONL rollout logs. The
// readers in the subpackages parse; this package owns the one commit path:
// deduplication against the parent snapshot, streaming writes in chunks,
// quarantine of bad records, and the "import" snapshot.
package importer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cualake/cualake/pipeline/importer/jsonl"
	"github.com/cualake/cualake/pipeline/importer/osworld"
	"github.com/cualake/cualake/pipeline/importer/record"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/schemas"
)

// Stage is the stage name of import snapshots.
const Stage = "import"

// Kinds of input.
const (
	KindOSWorldTasks   = "osworld-tasks"
	KindOSWorldResults = "osworld-results"
	KindJSONL          = "jsonl"
)

// Kinds lists the input kinds.
var Kinds = []string{KindOSWorldTasks, KindOSWorldResults, KindJSONL}

// ErrRejected is returned when bad records stopped an import without
// --quarantine; nothing was committed.
var ErrRejected = errors.New("bad input records")

// Defaults for Options.
const (
	DefaultChunkRows     = 64 * 1024
	DefaultStepChunkRows = 8192 // steps can be large (responses, trees)
	DefaultBlobChunkRows = 512  // as rollout's: screenshots
	// maxListedRejects bounds the rejects a report lists (all are counted).
	maxListedRejects = 100
	// DefaultMaxFileBytes caps one file an input names (64 MiB).
	DefaultMaxFileBytes = record.DefaultMaxFileBytes
)

// Options says what to import and how.
type Options struct {
	Kind  string
	Paths []string // one folder for the osworld kinds; one or more files for jsonl
	Index string   // osworld-tasks: import only the tasks this index file names
	// Quarantine commits the good records and puts bad ones into rejects;
	// without it a bad record fails the import and nothing is committed.
	Quarantine bool
	Workers    int // osworld-results: parallel episode readers (0: one per CPU)
	// Rows per data file (and buffered in memory before a sorted run is
	// spilled): ChunkRows for tasks, trajectories and rejects,
	// StepChunkRows for steps, BlobChunkRows for blobs. They shape the
	// files, so sharded and unsharded runs must use the same ones.
	ChunkRows, StepChunkRows, BlobChunkRows int
	Progress                                func(done, total int) // optional
	// In is the snapshot to import on top of ("" is main's head).
	In string
	// NewHistory lets an import start a new root where main is missing but
	// the lake holds snapshots (lake.NewHistory); otherwise that is refused.
	NewHistory bool
	// Shard, when sharded, imports only the files of one shard and writes
	// a fragment (Report.Fragment) instead of committing: osworld-tasks
	// by task file, keyed by its id (so copies of one id in two domains
	// meet in one shard); osworld-results by episode folder; jsonl by input
	// file, reading the files before its own (without writing them) so
	// that a record already given in an earlier file is skipped as it is
	// in an unsharded import.
	Shard shard.Spec
	// MaxFileBytes caps each file an input names or holds (a screenshot, a
	// run log, a task file; 0: DefaultMaxFileBytes). A larger one, or one
	// that is no regular file (a FIFO, a device, a folder), is a reject.
	MaxFileBytes int64
}

// Counts are rows added by an import and rows it found already present
// (in the parent snapshot or earlier in the same input).
type Counts struct {
	Added   int `json:"added"`
	Present int `json:"present"`
}

// RejectInfo is one bad record as a report lists it.
type RejectInfo struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Report says what an import did. When it fails on bad records, the counts
// say what it would have added.
type Report struct {
	Kind         string       `json:"kind"`
	Paths        []string     `json:"paths"`
	Parent       string       `json:"parent"`
	Snapshot     string       `json:"snapshot"` // the new snapshot, or the parent when nothing was new
	Committed    bool         `json:"committed"`
	Tasks        Counts       `json:"tasks"`
	Trajectories Counts       `json:"trajectories"`
	Steps        int          `json:"steps"`
	Blobs        Counts       `json:"blobs"`
	Rejected     int          `json:"rejected"`
	Quarantined  int          `json:"quarantined"` // rejects rows written (new ones only)
	Rejects      []RejectInfo `json:"rejects"`     // the first 100
	Missing      []string     `json:"missing"`     // osworld-tasks --index: domain/id named but absent
	// Fragment is the fragment a sharded import wrote (nothing committed).
	Fragment *shard.Fragment `json:"-"`
}

// params is what the snapshot records about the import.
type params struct {
	Kind       string `json:"kind"`
	Path       any    `json:"path"` // the path as given; a list for several jsonl files
	Index      string `json:"index"`
	Quarantine bool   `json:"quarantine"`
}

// Run imports opts.Paths into the lake on top of its head and commits one
// snapshot with stage "import". Importing the same input again adds nothing
// and commits nothing.
func Run(ctx context.Context, l *lake.Lake, opts Options) (*Report, error) {
	if !slices.Contains(Kinds, opts.Kind) {
		return nil, fmt.Errorf("import: unknown kind %q (want %s)", opts.Kind, strings.Join(Kinds, ", "))
	}
	if len(opts.Paths) == 0 {
		return nil, fmt.Errorf("import %s: no input path", opts.Kind)
	}
	if opts.Kind != KindJSONL && len(opts.Paths) != 1 {
		return nil, fmt.Errorf("import %s: want one folder, got %d paths", opts.Kind, len(opts.Paths))
	}
	if opts.Index != "" && opts.Kind != KindOSWorldTasks {
		return nil, fmt.Errorf("import %s: --index applies to osworld-tasks only", opts.Kind)
	}
	if opts.MaxFileBytes < 0 {
		return nil, fmt.Errorf("import %s: --max-file-bytes is %d, want a positive size (0: the default, %d)", opts.Kind, opts.MaxFileBytes, DefaultMaxFileBytes)
	}
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = DefaultChunkRows
	}
	if opts.StepChunkRows <= 0 {
		opts.StepChunkRows = min(DefaultStepChunkRows, opts.ChunkRows)
	}
	if opts.BlobChunkRows <= 0 {
		opts.BlobChunkRows = min(DefaultBlobChunkRows, opts.ChunkRows)
	}
	var begin []lake.BeginOption
	if opts.NewHistory {
		begin = append(begin, lake.NewHistory())
	}
	tx, err := l.Begin(ctx, opts.In, begin...)
	if err != nil {
		return nil, err
	}
	c, err := newCommitter(ctx, l, tx, opts)
	if err != nil {
		return nil, err
	}
	defer c.out.Discard()
	rep := c.rep
	rep.Kind, rep.Paths, rep.Parent, rep.Snapshot = opts.Kind, opts.Paths, tx.Parent(), tx.Parent()
	spec := opts.Shard
	switch opts.Kind {
	case KindOSWorldTasks:
		var keep func(domain, id string) bool
		if spec.Sharded() {
			keep = func(_, id string) bool { return spec.Owns(id) }
		}
		res, err := osworld.ReadTasksFiltered(ctx, opts.Paths[0], opts.Index, keep, opts.MaxFileBytes, c)
		if err != nil {
			return rep, fmt.Errorf("import %s: %w", opts.Kind, err)
		}
		if res.Missing != nil {
			rep.Missing = res.Missing
		}
	case KindOSWorldResults:
		var keep func(p *osworld.EpisodePath) bool
		if spec.Sharded() {
			keep = func(p *osworld.EpisodePath) bool { return spec.Owns(p.Rel) }
		}
		ro := osworld.ResultsOptions{Workers: opts.Workers, Keep: keep, MaxFileBytes: opts.MaxFileBytes}
		if _, err := osworld.ReadResultsWith(ctx, opts.Paths[0], ro, c); err != nil {
			return rep, fmt.Errorf("import %s: %w", opts.Kind, err)
		}
	case KindJSONL:
		// Files are the shards' keys. A record whose task or trajectory an
		// earlier file gave is present, not added: a shard reads the files
		// before its last own one, writing nothing, to know them.
		last := -1
		for i, f := range opts.Paths {
			if spec.Owns(f) {
				last = i
			}
		}
		claims := claimSink{c}
		sinkFor := func(i int) record.Sink {
			switch {
			case spec.Owns(opts.Paths[i]):
				return c
			case i < last:
				return claims
			}
			return nil
		}
		if err := jsonl.ReadFilesWith(ctx, opts.Paths, jsonl.ReadOptions{MaxFileBytes: opts.MaxFileBytes}, sinkFor); err != nil {
			return rep, fmt.Errorf("import %s: %w", opts.Kind, err)
		}
	}
	if c.err != nil {
		return rep, fmt.Errorf("import %s: %w", opts.Kind, c.err)
	}
	if rep.Rejected > 0 && !opts.Quarantine {
		first := rep.Rejects[0]
		return rep, fmt.Errorf("import %s: %w: %d bad record(s), first %s:%d field %s: %s; nothing committed (--quarantine commits the good ones and keeps the bad ones in rejects)",
			opts.Kind, ErrRejected, rep.Rejected, first.File, first.Line, first.Field, first.Reason)
	}
	if !spec.Sharded() && !c.changed() {
		return rep, nil // everything was already there: no empty snapshot
	}
	res, err := c.out.Finish(ctx, CommitInfo(opts))
	if err != nil {
		return rep, fmt.Errorf("import %s: %w", opts.Kind, err)
	}
	if res.Fragment != nil {
		rep.Fragment = res.Fragment
		return rep, nil
	}
	rep.Snapshot, rep.Committed = res.Manifest.ID, true
	return rep, nil
}

func init() {
	// A sharded import merges as any other stage, except that, as the
	// unsharded import, it commits nothing when nothing is new.
	shard.RegisterStageMerge(Stage, shard.StageMerge{SkipEmpty: true})
}

// CommitInfo is what an import's snapshot records.
func CommitInfo(opts Options) lake.CommitInfo {
	var path any = opts.Paths[0]
	if len(opts.Paths) > 1 {
		path = opts.Paths
	}
	return lake.CommitInfo{Stage: Stage, Params: params{Kind: opts.Kind, Path: path, Index: opts.Index, Quarantine: opts.Quarantine}}
}

// claimSink reads a file another shard imports: it only notes the tasks and
// trajectories it gives, which are then present (or conflicting) for the
// files after it, as in an unsharded import. A record the owning shard
// rejects as a conflict is not noted; one whose key the parent holds need
// not be, since later ones are compared with the parent's.
type claimSink struct{ c *committer }

func (s claimSink) Task(t schemas.Task) error {
	if prev, ok := s.c.tasks[t.TaskID]; ok {
		if loc, isLine := originLoc(&t); isLine && prev.hash != taskHash(&t) {
			s.c.skip = &loc
		}
		return nil
	}
	s.c.noteTask(&t)
	return nil
}

func (s claimSink) Episode(e *record.Episode) error {
	id := e.Trajectory.TrajectoryID
	if s.c.skipsLine(e) || s.c.baseTraj[id] {
		return nil
	}
	if _, ok := s.c.traj[id]; !ok {
		s.c.traj[id] = seen{hash: episodeHash(e), file: e.File, line: e.Line}
	}
	return nil
}

func (s claimSink) Reject(*record.Error) error     { return nil }
func (s claimSink) KnownTrajectory(id string) bool { return s.c.baseTraj[id] }
func (s claimSink) Progress(done, total int)       {}

// committer is the record.Sink every reader writes to. It is used from one
// goroutine, except KnownTrajectory, which reads only the immutable
// parent set.
type committer struct {
	ctx  context.Context
	l    *lake.Lake
	base *lake.Manifest
	opts Options
	rep  *Report
	err  error // first write error; later calls do nothing

	baseTraj, blobs, rejectKeys map[string]bool
	// tasks holds every task id of the parent and the input, traj the
	// trajectory ids of the input, with their content hashes; baseHash,
	// the parent trajectories' hashes, is read on the first id met again.
	tasks, traj map[string]seen
	baseHash    map[string][32]byte
	// skip is the JSONL line whose embedded task was rejected: its
	// trajectory, which comes next, goes with it.
	skip *lineLoc

	// Every table goes through shard.Output, sharded or not, so that a
	// merge of fragments writes exactly the files an unsharded import
	// writes. The writers keep memory bounded by spilling sorted runs.
	out     *shard.Output
	tTasks  *shard.Table[schemas.Task]
	tTraj   *shard.Table[schemas.Trajectory]
	tSteps  *shard.Table[schemas.Step]
	tBlobs  *shard.Table[schemas.Blob]
	tReject *shard.Table[schemas.Reject]
}

func newCommitter(ctx context.Context, l *lake.Lake, tx *lake.Txn, opts Options) (*committer, error) {
	c := &committer{ctx: ctx, l: l, opts: opts, rep: &Report{Rejects: []RejectInfo{}, Missing: []string{}},
		tasks: map[string]seen{}, baseTraj: map[string]bool{}, traj: map[string]seen{}, rejectKeys: map[string]bool{}}
	c.out = shard.NewOutput(l, tx, opts.Shard)
	c.tTasks = shard.NewTable(c.out, schemas.Tasks, shard.TableOptions{Chunk: opts.ChunkRows})
	c.tTraj = shard.NewTable(c.out, schemas.Trajectories, shard.TableOptions{Chunk: opts.ChunkRows})
	c.tSteps = shard.NewTable(c.out, schemas.Steps, shard.TableOptions{Chunk: opts.StepChunkRows})
	// Screenshots repeat across episodes and shards; equal hashes are equal blobs.
	c.tBlobs = shard.NewTable(c.out, schemas.Blobs, shard.TableOptions{Chunk: opts.BlobChunkRows, Dedup: true})
	c.tReject = shard.NewTable(c.out, schemas.Rejects, shard.TableOptions{Chunk: opts.ChunkRows})
	base := tx.Base()
	c.base = base
	if base.ID == "" {
		c.blobs = map[string]bool{}
		return c, nil
	}
	err := lake.ScanTable(ctx, l, base, schemas.Tasks, 1024, func(rows []schemas.Task) error {
		for i := range rows {
			c.tasks[rows[i].TaskID] = seen{hash: taskHash(&rows[i]), file: rows[i].Origin, parent: true}
		}
		return nil
	})
	if err == nil {
		err = lake.ScanTable(ctx, l, base, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
			for i := range rows {
				c.baseTraj[rows[i].TrajectoryID] = true
			}
			return nil
		})
	}
	if err == nil {
		err = lake.ScanTable(ctx, l, base, schemas.Rejects, 1024, func(rows []schemas.Reject) error {
			for i := range rows {
				c.rejectKeys[schemas.Rejects.KeyOf(&rows[i])] = true
			}
			return nil
		})
	}
	if err == nil {
		c.blobs, err = lake.BlobHashes(ctx, l, base)
	}
	if err != nil {
		return nil, fmt.Errorf("import: read parent snapshot: %w", err)
	}
	return c, nil
}

// writing reports whether rows still go to the lake: not after a write
// error, and not after a bad record when quarantine is off (the import will
// fail, so writing more would only leave files for gc).
func (c *committer) writing() bool {
	return c.err == nil && (c.opts.Quarantine || c.rep.Rejected == 0)
}

// Task implements record.Sink.
func (c *committer) Task(t schemas.Task) error {
	if prev, ok := c.tasks[t.TaskID]; ok {
		if prev.hash == taskHash(&t) {
			c.rep.Tasks.Present++
			return nil
		}
		loc, isLine := originLoc(&t)
		field, extra := "id", ""
		if isLine {
			c.skip = &loc
			field, extra = "task", "; the line's trajectory is not imported either"
		}
		return c.Reject(c.conflict(loc, field, "task_id", t.TaskID, schemas.Tasks.Name, []byte(t.Raw), prev, extra))
	}
	c.noteTask(&t)
	c.rep.Tasks.Added++
	if c.writing() {
		c.add(c.tTasks.Add(t))
	}
	return c.err
}

// noteTask takes t's id.
func (c *committer) noteTask(t *schemas.Task) {
	loc, _ := originLoc(t)
	c.tasks[t.TaskID] = seen{hash: taskHash(t), file: loc.file, line: loc.line}
}

// skipsLine reports whether e is the trajectory of a line whose task was
// rejected, and forgets that line: its trajectory comes right after it.
func (c *committer) skipsLine(e *record.Episode) bool {
	s := c.skip
	c.skip = nil
	return s != nil && s.file == e.File && s.line == e.Line
}

// add records the first write error.
func (c *committer) add(err error) {
	if err != nil && c.err == nil {
		c.err = fmt.Errorf("write: %w", err)
	}
}

// changed reports whether the import adds any row.
func (c *committer) changed() bool {
	return c.tTasks.Rows()+c.tTraj.Rows()+c.tSteps.Rows()+c.tBlobs.Rows()+c.tReject.Rows() > 0
}

// KnownTrajectory implements record.Sink.
func (c *committer) KnownTrajectory(id string) bool { return c.baseTraj[id] }

// Episode implements record.Sink.
func (c *committer) Episode(e *record.Episode) error {
	if c.skipsLine(e) {
		return c.err
	}
	id := e.Trajectory.TrajectoryID
	// An episode given as its id alone is one the lake holds and the
	// reader did not read again (osworld-results): present.
	idOnly := e.Trajectory.TaskID == "" && len(e.Steps) == 0
	prev, ok, err := c.knownTrajectory(id, idOnly)
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		return c.err
	}
	h := [32]byte{}
	if !idOnly {
		h = episodeHash(e)
	}
	if ok {
		if idOnly || prev.hash == h {
			c.rep.Trajectories.Present++
			return nil
		}
		return c.Reject(c.conflict(lineLoc{e.File, e.Line}, "trajectory_id", "trajectory_id", id, schemas.Trajectories.Name, e.Raw, prev, ""))
	}
	c.traj[id] = seen{hash: h, file: e.File, line: e.Line}
	c.rep.Trajectories.Added++
	c.rep.Steps += len(e.Steps)
	w := c.writing()
	for i := range e.Blobs {
		b := &e.Blobs[i]
		if c.blobs[b.Hash] {
			c.rep.Blobs.Present++
			continue
		}
		c.blobs[b.Hash] = true
		c.rep.Blobs.Added++
		if w && c.err == nil {
			c.add(c.tBlobs.Add(*b))
		}
	}
	if !w || c.err != nil {
		return c.err
	}
	c.add(c.tTraj.Add(e.Trajectory))
	if c.err == nil {
		c.add(c.tSteps.Add(e.Steps...))
	}
	return c.err
}

// Reject implements record.Sink.
func (c *committer) Reject(e *record.Error) error {
	c.rep.Rejected++
	if len(c.rep.Rejects) < maxListedRejects {
		c.rep.Rejects = append(c.rep.Rejects, RejectInfo{File: e.File, Line: e.Line, Field: e.Field, Reason: e.Reason})
	}
	if !c.opts.Quarantine {
		c.drop()
		return nil
	}
	r := e.Reject(Stage)
	if k := schemas.Rejects.KeyOf(&r); !c.rejectKeys[k] {
		c.rejectKeys[k] = true
		c.rep.Quarantined++
		if c.err == nil {
			c.add(c.tReject.Add(r))
		}
	}
	return c.err
}

// Progress implements record.Sink.
func (c *committer) Progress(done, total int) {
	if c.opts.Progress != nil {
		c.opts.Progress(done, total)
	}
}

// drop forgets buffered rows once the import is bound to fail.
func (c *committer) drop() { c.out.Discard() }
