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
	DefaultChunkRows  = 64 * 1024
	DefaultChunkBytes = 32 << 20
	// maxListedRejects bounds the rejects a report lists (all are counted).
	maxListedRejects = 100
)

// Options says what to import and how.
type Options struct {
	Kind  string
	Paths []string // one folder for the osworld kinds; one or more files for jsonl
	Index string   // osworld-tasks: import only the tasks this index file names
	// Quarantine commits the good records and puts bad ones into rejects;
	// without it a bad record fails the import and nothing is committed.
	Quarantine bool
	Workers    int                   // osworld-results: parallel episode readers (0: one per CPU)
	ChunkRows  int                   // rows per data file of tasks, trajectories, steps, rejects
	ChunkBytes int64                 // blob bytes per blobs data file
	Progress   func(done, total int) // optional
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
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = DefaultChunkRows
	}
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = DefaultChunkBytes
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		return nil, err
	}
	c, err := newCommitter(ctx, l, tx, opts)
	if err != nil {
		return nil, err
	}
	rep := c.rep
	rep.Kind, rep.Paths, rep.Parent, rep.Snapshot = opts.Kind, opts.Paths, tx.Parent(), tx.Parent()
	switch opts.Kind {
	case KindOSWorldTasks:
		res, err := osworld.ReadTasks(ctx, opts.Paths[0], opts.Index, c)
		if err != nil {
			return rep, fmt.Errorf("import %s: %w", opts.Kind, err)
		}
		if res.Missing != nil {
			rep.Missing = res.Missing
		}
	case KindOSWorldResults:
		if _, err := osworld.ReadResults(ctx, opts.Paths[0], opts.Workers, c); err != nil {
			return rep, fmt.Errorf("import %s: %w", opts.Kind, err)
		}
	case KindJSONL:
		if err := jsonl.ReadFiles(ctx, opts.Paths, c); err != nil {
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
	if err := c.flushAll(); err != nil {
		return rep, fmt.Errorf("import %s: %w", opts.Kind, err)
	}
	if !c.changed {
		return rep, nil // everything was already there: no empty snapshot
	}
	var path any = opts.Paths[0]
	if len(opts.Paths) > 1 {
		path = opts.Paths
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: Stage, Params: params{Kind: opts.Kind, Path: path, Index: opts.Index, Quarantine: opts.Quarantine}})
	if err != nil {
		return rep, fmt.Errorf("import %s: %w", opts.Kind, err)
	}
	rep.Snapshot, rep.Committed = m.ID, true
	return rep, nil
}

// committer is the record.Sink every reader writes to. It is used from one
// goroutine, except KnownTrajectory, which reads only the immutable
// parent set.
type committer struct {
	ctx  context.Context
	tx   *lake.Txn
	opts Options
	rep  *Report
	err  error // first write error; later calls do nothing

	tasks, baseTraj, traj, blobs, rejectKeys map[string]bool

	bufTasks   []schemas.Task
	bufTraj    []schemas.Trajectory
	bufSteps   []schemas.Step
	stepBytes  int64
	bufBlobs   []schemas.Blob
	blobBytes  int64
	bufRejects []schemas.Reject
	changed    bool
}

func newCommitter(ctx context.Context, l *lake.Lake, tx *lake.Txn, opts Options) (*committer, error) {
	c := &committer{ctx: ctx, tx: tx, opts: opts, rep: &Report{Rejects: []RejectInfo{}, Missing: []string{}},
		tasks: map[string]bool{}, baseTraj: map[string]bool{}, traj: map[string]bool{}, rejectKeys: map[string]bool{}}
	base := tx.Base()
	if base.ID == "" {
		c.blobs = map[string]bool{}
		return c, nil
	}
	err := lake.ScanTable(ctx, l, base, schemas.Tasks, 1024, func(rows []schemas.Task) error {
		for i := range rows {
			c.tasks[rows[i].TaskID] = true
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
	if c.tasks[t.TaskID] {
		c.rep.Tasks.Present++
		return nil
	}
	c.tasks[t.TaskID] = true
	c.rep.Tasks.Added++
	if c.writing() {
		c.bufTasks = append(c.bufTasks, t)
		if len(c.bufTasks) >= c.opts.ChunkRows {
			c.flushTasks()
		}
	}
	return c.err
}

// KnownTrajectory implements record.Sink.
func (c *committer) KnownTrajectory(id string) bool { return c.baseTraj[id] }

// Episode implements record.Sink.
func (c *committer) Episode(e *record.Episode) error {
	id := e.Trajectory.TrajectoryID
	if c.baseTraj[id] || c.traj[id] {
		c.rep.Trajectories.Present++
		return nil
	}
	c.traj[id] = true
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
		if w {
			c.bufBlobs = append(c.bufBlobs, *b)
			c.blobBytes += b.Size
		}
	}
	if !w {
		return c.err
	}
	c.bufTraj = append(c.bufTraj, e.Trajectory)
	c.bufSteps = append(c.bufSteps, e.Steps...)
	for i := range e.Steps {
		c.stepBytes += stepSize(&e.Steps[i])
	}
	if c.blobBytes >= c.opts.ChunkBytes {
		c.flushBlobs()
	}
	if len(c.bufSteps) >= c.opts.ChunkRows || c.stepBytes >= c.opts.ChunkBytes {
		c.flushSteps()
	}
	if len(c.bufTraj) >= c.opts.ChunkRows {
		c.flushTraj()
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
		c.bufRejects = append(c.bufRejects, r)
		if len(c.bufRejects) >= c.opts.ChunkRows {
			c.flushRejects()
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
func (c *committer) drop() {
	c.bufTasks, c.bufTraj, c.bufSteps, c.bufBlobs, c.bufRejects, c.blobBytes, c.stepBytes = nil, nil, nil, nil, nil, 0, 0
}

// stepSize estimates the memory a buffered step holds; long responses and
// token streams make rows far larger than their count suggests.
func stepSize(s *schemas.Step) int64 {
	n := len(s.TrajectoryID) + len(s.RawAction) + len(s.Response) + len(s.Observation) + len(s.A11y) + len(s.Info) +
		len(s.Text) + len(s.Timestamp) + len(s.ActionError) + 4*len(s.ResponseIDs) + 4*len(s.Logprobs) + 400 // the struct and its pointers
	for _, k := range s.Keys {
		n += len(k) + 16
	}
	return int64(n)
}

// appendRows writes rows as new files of def and clears the buffer, so
// memory stays bounded by one chunk per table.
func appendRows[T any](c *committer, def *schemas.Table[T], buf *[]T) {
	if c.err != nil || len(*buf) == 0 {
		return
	}
	if err := lake.AppendTable(c.ctx, c.tx, def, *buf); err != nil {
		c.err = fmt.Errorf("write %s: %w", def.Name, err)
		return
	}
	c.changed = true
	clear(*buf) // drop references (screenshot bytes) for the GC
	*buf = (*buf)[:0]
}

func (c *committer) flushTasks() { appendRows(c, schemas.Tasks, &c.bufTasks) }
func (c *committer) flushTraj()  { appendRows(c, schemas.Trajectories, &c.bufTraj) }
func (c *committer) flushSteps() {
	appendRows(c, schemas.Steps, &c.bufSteps)
	c.stepBytes = 0
}
func (c *committer) flushRejects() { appendRows(c, schemas.Rejects, &c.bufRejects) }
func (c *committer) flushBlobs() {
	appendRows(c, schemas.Blobs, &c.bufBlobs)
	c.blobBytes = 0
}

func (c *committer) flushAll() error {
	c.flushTasks()
	c.flushTraj()
	c.flushSteps()
	c.flushBlobs()
	c.flushRejects()
	return c.err
}
