package segment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cualake/cualake/pipeline/advantage"
	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
)

// Stage is the stage name recorded in commits and rejects.
const Stage = "segment"

// TokenizerInfo identifies a tokenizer file in commits and rows.
type TokenizerInfo struct {
	File   string `json:"file"`   // base name
	SHA256 string `json:"sha256"` // of the file's bytes
}

// String is the form written to segments.tokenizer.
func (t TokenizerInfo) String() string {
	if len(t.SHA256) >= 16 {
		return t.File + "@sha256:" + t.SHA256[:16]
	}
	return t.File
}

// LoadTokenizer loads a tokenizer.json and hashes its bytes.
func LoadTokenizer(path string) (*tokenizer.Tokenizer, TokenizerInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, TokenizerInfo{}, fmt.Errorf("tokenizer: %w", err)
	}
	sum := sha256.Sum256(b)
	t, err := tokenizer.Load(path)
	if err != nil {
		return nil, TokenizerInfo{}, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	return t, TokenizerInfo{File: filepath.Base(path), SHA256: hex.EncodeToString(sum[:])}, nil
}

// Config is what a run needs besides its parameters: the tokenizer.
type Config struct {
	Params
	Tokenizer     tokenizer.Encoder
	TokenizerInfo TokenizerInfo
	// Progress, when set, is called with the number of trajectories done
	// (from one goroutine, in order; a shard counts the trajectories it
	// skips too).
	Progress func(done int)
	// Shard, when set, segments only the trajectories whose id falls in this
	// shard and writes a fragment instead of committing; `cualake lake
	// merge` commits the N fragments as the snapshot an unsharded run
	// commits (same files, same id).
	Shard shard.Spec
}

// Record is what a commit records about the run: everything that shapes
// the output, nothing that does not (workers).
func (c Config) Record() map[string]any {
	img := map[string]int{"fixed_tokens": c.Image.FixedTokens}
	if c.Image.FixedTokens == 0 {
		img = map[string]int{"patch_size": c.Image.PatchSize, "merge_size": c.Image.MergeSize,
			"min_pixels": c.Image.MinPixels, "max_pixels": c.Image.MaxPixels}
	}
	r := map[string]any{"mode": c.Mode, "k": c.K, "delta": c.Delta, "window": c.Window,
		"tokenizer": c.TokenizerInfo, "image": img, "system": c.System, "quarantine": c.Quarantine,
		"advantage": c.AdvantageMode()}
	if c.View != "" && c.View != ViewPlain {
		r["view"] = c.View
	}
	if c.FileRows > 0 {
		r["file_rows"] = c.FileRows
	}
	return r
}

// CommitInfo is what the run commits on top of m, the same for every shard.
func (c Config) CommitInfo(m *lake.Manifest) lake.CommitInfo {
	return lake.CommitInfo{Stage: Stage, Params: c.Record(), Inputs: []string{m.ID}}
}

// Summary describes a run's output, against the item counts each mode
// predicts.
type Summary struct {
	Mode   Mode `json:"mode"`
	K      int  `json:"k"`
	Delta  int  `json:"delta"`
	Window int  `json:"window"`
	// Trajectories counts the segmented trajectories; Empty those without
	// turns (no items), Rejected those quarantined.
	Trajectories int   `json:"trajectories"`
	Empty        int   `json:"empty_trajectories"`
	Rejected     int   `json:"rejected_trajectories"`
	Turns        int64 `json:"turns"`
	Items        int64 `json:"items"`
	Tokens       int64 `json:"tokens"`
	ImageTokens  int64 `json:"image_tokens"`
	Trainable    int64 `json:"trainable_tokens"`
	Images       int64 `json:"images"`
	MaxTokens    int   `json:"max_tokens_per_item"`
	MaxImages    int   `json:"max_images_per_item"`
	// Means per item and per trajectory.
	TokensPerItem float64 `json:"tokens_per_item"`
	ImagesPerItem float64 `json:"images_per_item"`
	ItemsPerTraj  float64 `json:"items_per_trajectory"`
	TurnsPerTraj  float64 `json:"turns_per_trajectory"`
	// WithoutLogprobs counts items with a trained token the rollout
	// recorded no log-probability for.
	WithoutLogprobs int64 `json:"items_without_logprobs"`
	// Merges counts observation diffs across a non-boundary where
	// re-tokenization merged tokens (0 with the Qwen template).
	Merges   int64    `json:"boundary_merges"`
	Files    int      `json:"files"`
	Expected Expected `json:"expected"`
}

// Expected holds the item counts of the three modes for the same
// trajectories: n, sum T, and sum of 1 + ceil(max(0, T - K - Delta)/Delta).
type Expected struct {
	Order      string `json:"order"`
	Formula    string `json:"formula"`
	Items      int64  `json:"items"`
	Trajectory int64  `json:"trajectory_items"`
	Step       int64  `json:"step_items"`
	Window     int64  `json:"window_items"`
}

// Result is what a run did: the snapshot it committed (unsharded) or the
// fragment it wrote (sharded), the segments files of either, the
// quarantined trajectories and the summary (of the shard's trajectories,
// when sharded).
type Result struct {
	Manifest *lake.Manifest
	Fragment *shard.Fragment
	Files    []lake.File
	Rejects  []schemas.Reject
	Summary  Summary
}

// The tables a run writes, sharded or not, through shard.Output:
//
//   - segments replaces the table. Rows are produced in key order
//     (trajectory id, index), so they go through a shard.OrderedTable:
//     every FileRows rows become a data file as soon as they are segmented,
//     on a few goroutines, and the files are exactly those a merge of
//     shard fragments writes (lake.SortedWriter, cut every FileRows rows).
//
//   - rejects holds every stage's quarantined records; a run replaces the
//     rows of earlier segment runs and keeps the others. It is a replaced
//     table split like the trajectories: each shard writes its own
//     trajectories' rejects, and shard 0 (or the unsharded run) also carries
//     the kept rows of other stages, so the N fragments together hold
//     exactly the unsharded rows. Whether the table is touched at all must
//     not depend on what one shard saw, or the merged snapshot would differ:
//     it is rewritten when --quarantine is set (even with no rejects, and
//     created empty if absent) or when the input holds segment rejects to
//     drop; otherwise it is left alone.
const rejectsChunk = 1 << 16

// blobDims projects the blobs table on what image token counts need, so
// that screenshots' bytes are never read.
type blobDims struct {
	Hash   string `parquet:"hash"`
	Width  int32  `parquet:"width"`
	Height int32  `parquet:"height"`
}

var blobDimsTable = &schemas.Table[blobDims]{Name: schemas.Blobs.Name}

// trajReward projects the trajectories table on what group advantages need.
type trajReward struct {
	TrajectoryID string  `parquet:"trajectory_id"`
	GroupID      string  `parquet:"group_id"`
	Reward       float64 `parquet:"reward"`
}

var trajRewardTable = &schemas.Table[trajReward]{Name: schemas.Trajectories.Name}

// groupAdvantages returns every trajectory's GRPO group advantage A_i
// (advantage.DefaultGRPO: sample std, eps 1e-6), over the whole groups of
// the snapshot's trajectories table, whichever of them this run or shard
// segments, so shards agree and a quarantined rollout still counts as one of
// its group's outcomes. It holds one entry per trajectory (tens of bytes),
// not their steps.
func groupAdvantages(ctx context.Context, l *lake.Lake, m *lake.Manifest) (map[string]float64, error) {
	var rows []schemas.Trajectory
	err := lake.ScanTable(ctx, l, m, trajRewardTable, 4096, func(rs []trajReward) error {
		for _, r := range rs {
			rows = append(rows, schemas.Trajectory{TrajectoryID: r.TrajectoryID, GroupID: r.GroupID, Reward: r.Reward})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("group advantages: %w", err)
	}
	adv, err := advantage.TrajectoryAdvantages(rows, advantage.DefaultGRPO())
	if err != nil {
		return nil, fmt.Errorf("group advantages of snapshot %s: %w", short(m.ID), err)
	}
	return adv, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// readChunk is the number of rows read at a time from each input file.
const readChunk = 1024

// maxWriters bounds the files written at once.
const maxWriters = 4

type job struct {
	seq   int
	skip  bool // another shard's trajectory: counted, not segmented
	traj  schemas.Trajectory
	steps []schemas.Step
	err   *Error // set for orphan steps or a repeated trajectory
}

type outcome struct {
	seq    int
	skip   bool
	traj   *schemas.Trajectory
	rows   []schemas.Segment
	turns  int
	merges int
	err    error
}

// Run segments the trajectories of snapshot m (those of cfg.Shard, when
// set) and commits the next snapshot, or writes the shard's fragment. It
// streams trajectories and steps (merged by trajectory id across files),
// segments trajectories on cfg.Workers goroutines and writes the segments in
// key order as data files of cfg.FileRows rows while it runs, so memory
// does not grow with the number of trajectories and the files are the same
// for any worker count and any sharding.
func Run(ctx context.Context, l *lake.Lake, m *lake.Manifest, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Tokenizer == nil {
		return nil, fmt.Errorf("%w: no tokenizer", ErrParams)
	}
	codec, err := NewCodec(cfg.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", cfg.TokenizerInfo.File, err)
	}
	tpl, err := chat.New(cfg.Tokenizer, cfg.Image)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", cfg.TokenizerInfo.File, err)
	}
	if _, ok := m.Tables[schemas.Trajectories.Name]; !ok {
		return nil, fmt.Errorf("snapshot %s has no trajectories table: run rollout or import first", m.ID)
	}
	instructions := map[string]string{}
	err = lake.ScanTable(ctx, l, m, schemas.Tasks, readChunk, func(rows []schemas.Task) error {
		for i := range rows {
			instructions[rows[i].TaskID] = rows[i].Instruction
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	imageSize, err := imageSizer(ctx, l, m, cfg.Image)
	if err != nil {
		return nil, err
	}
	advs, err := groupAdvantages(ctx, l, m)
	if err != nil {
		return nil, err
	}
	trees, err := treeSource(ctx, l, m, cfg.View)
	if err != nil {
		return nil, err
	}
	oldRejects, err := lake.ReadTable(ctx, l, m, schemas.Rejects)
	if err != nil {
		return nil, err
	}
	workers := max(cfg.Workers, 1)
	fileRows := cfg.FileRows
	if fileRows <= 0 {
		fileRows = DefaultFileRows
	}

	tx, err := l.Begin(ctx, m.ID)
	if err != nil {
		return nil, err
	}
	info := cfg.CommitInfo(m)
	out := shard.NewOutput(l, tx, cfg.Shard)
	defer out.Discard()
	// Items' token arrays go back to the pool once their file is written.
	pool := new(Pool)
	// Writing Parquet (validation, encoding, zstd) costs more than
	// segmenting, so files are written in parallel too; each writer holds a
	// file's rows and a zstd encoder, hence the cap.
	segs, err := shard.NewOrderedTable(ctx, out, schemas.Segments, shard.TableOptions{Chunk: fileRows, Replace: true}, info, min(workers, maxWriters))
	if err != nil {
		return nil, err
	}
	segs.Release = func(rows []schemas.Segment) {
		for i := range rows {
			pool.put(rows[i].InputIDs, rows[i].LossMask, rows[i].Logprobs)
		}
	}
	var rejects *shard.Table[schemas.Reject]
	if cfg.Quarantine || slices.ContainsFunc(oldRejects, func(r schemas.Reject) bool { return r.Stage == Stage }) {
		rejects = shard.NewTable(out, schemas.Rejects, shard.TableOptions{Chunk: rejectsChunk, Replace: true})
		if cfg.Shard.Index == 0 {
			for _, r := range oldRejects {
				if r.Stage != Stage {
					if err := rejects.Add(r); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	oldRejects = nil

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan job, workers)
	outs := make(chan outcome, workers)
	slots := make(chan struct{}, 4*workers) // bounds jobs in flight, hence the reorder buffer
	var readErr error
	go func() {
		defer close(jobs)
		readErr = produce(ctx, l, m, cfg.Shard, slots, jobs)
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := NewBuilder(codec, tpl, cfg.System)
			if b != nil {
				b.WithView(cfg.View)
			}
			for j := range jobs {
				switch {
				case j.skip:
					outs <- outcome{seq: j.seq, skip: true}
				case err != nil:
					outs <- outcome{seq: j.seq, traj: &j.traj, err: err}
				default:
					outs <- work(b, codec, pool, &cfg, instructions, imageSize, trees, advs, j)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(outs) }()

	res := &Result{Summary: Summary{Mode: cfg.Mode, K: cfg.K, Delta: cfg.Delta, Window: cfg.Window}}
	pending := map[int]outcome{}
	next := 0
	var firstErr error
	for o := range outs {
		pending[o.seq] = o
		for {
			o, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			<-slots
			if firstErr != nil {
				continue
			}
			if cfg.Progress != nil {
				cfg.Progress(next)
			}
			if o.skip {
				continue
			}
			if o.err != nil {
				var te *Error
				if !cfg.Quarantine || !errors.As(o.err, &te) {
					firstErr = o.err
					cancel()
					continue
				}
				rj := reject(te, o.traj)
				res.Rejects = append(res.Rejects, rj)
				res.Summary.Rejected++
				if err := rejects.Add(rj); err != nil {
					firstErr = err
					cancel()
				}
				continue
			}
			res.Summary.add(&cfg.Params, o)
			if err := segs.Add(o.rows...); err != nil {
				firstErr = err
				cancel()
			}
		}
	}
	if firstErr == nil && readErr != nil {
		firstErr = readErr
	}
	if firstErr != nil {
		return nil, firstErr
	}
	// The fragment stores the shard's summary (informational, never
	// merged), so it is complete before Finish: files are cut every
	// fileRows rows, and an unsharded run writes one even for no rows.
	files := int((res.Summary.Items + int64(fileRows) - 1) / int64(fileRows))
	if files == 0 && !cfg.Shard.Sharded() {
		files = 1
	}
	res.Summary.finish(&cfg.Params, files)
	out.Summary = &res.Summary
	done, err := out.Finish(ctx, info)
	if err != nil {
		return nil, err
	}
	res.Manifest, res.Fragment = done.Manifest, done.Fragment
	if done.Fragment != nil {
		res.Files = done.Fragment.Tables[schemas.Segments.Name].Files
	} else {
		res.Files = done.Manifest.Tables[schemas.Segments.Name].Files
	}
	res.Summary.Files = len(res.Files)
	return res, nil
}

// produce merge-joins trajectories and steps by trajectory id and sends one
// job per trajectory (and per run of orphan steps), in key order.
// Trajectories of other shards are sent as skip jobs (for progress), their
// steps read past; orphan steps of other shards are not sent.
func produce(ctx context.Context, l *lake.Lake, m *lake.Manifest, spec shard.Spec, slots chan struct{}, jobs chan<- job) error {
	trajs := mergeTable(ctx, l, m, schemas.Trajectories, readChunk, schemas.Trajectories.Less)
	defer trajs.Close()
	steps := mergeTable(ctx, l, m, schemas.Steps, readChunk, schemas.Steps.Less)
	defer steps.Close()
	seq := 0
	send := func(j job) bool {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		j.seq = seq
		seq++
		select {
		case jobs <- j:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// orphans sends the steps whose trajectory id sorts before limit
	// ("" = all the rest) as one job per missing trajectory.
	orphans := func(limit string) bool {
		for {
			st, ok := steps.Peek()
			if !ok || (limit != "" && st.TrajectoryID >= limit) {
				return true
			}
			id := st.TrajectoryID
			n := 0
			for st, ok := steps.Peek(); ok && st.TrajectoryID == id; st, ok = steps.Peek() {
				steps.Next()
				n++
			}
			if !spec.Owns(id) {
				continue
			}
			e := &Error{TrajectoryID: id, Step: -1, Field: "trajectory_id",
				Err: fmt.Errorf("%d steps rows belong to a trajectory the trajectories table lacks", n)}
			if !send(job{traj: schemas.Trajectory{TrajectoryID: id}, err: e}) {
				return false
			}
		}
	}
	prev := ""
	for {
		t, ok := trajs.Next()
		if !ok {
			break
		}
		if !orphans(t.TrajectoryID) {
			return ctx.Err()
		}
		j := job{traj: t, skip: !spec.Owns(t.TrajectoryID)}
		if j.skip {
			for st, ok := steps.Peek(); ok && st.TrajectoryID == t.TrajectoryID; st, ok = steps.Peek() {
				steps.Next()
			}
			prev = t.TrajectoryID
			if !send(job{skip: true}) {
				return ctx.Err()
			}
			continue
		}
		if t.TrajectoryID == prev {
			j.err = &Error{TrajectoryID: t.TrajectoryID, Step: -1, Field: "trajectory_id", Err: errors.New("the trajectories table holds it twice")}
		}
		prev = t.TrajectoryID
		for st, ok := steps.Peek(); ok && st.TrajectoryID == t.TrajectoryID; st, ok = steps.Peek() {
			row, _ := steps.Next()
			j.steps = append(j.steps, row)
		}
		if !send(j) {
			return ctx.Err()
		}
	}
	if err := trajs.Err(); err != nil {
		return err
	}
	if !orphans("") {
		return ctx.Err()
	}
	return steps.Err()
}

func work(b *Builder, c *Codec, pool *Pool, cfg *Config, instructions map[string]string, imageSize func(*schemas.Step) (int, int, error),
	trees func(*schemas.Step) ([]byte, error), advs map[string]float64, j job) outcome {
	o := outcome{seq: j.seq, traj: &j.traj}
	if j.err != nil {
		o.err = j.err
		return o
	}
	t := &j.traj
	instr, ok := instructions[t.TaskID]
	if !ok {
		o.err = &Error{TrajectoryID: t.TrajectoryID, Step: -1, Field: "task_id", Err: fmt.Errorf("task %q is not in the tasks table", t.TaskID)}
		return o
	}
	p, err := b.Prepare(Input{Trajectory: t, Steps: j.steps, Instruction: instr, ImageSize: imageSize, Tree: trees})
	if err != nil {
		o.err = err
		return o
	}
	items, merges, err := pool.Segment(c, p, cfg.Params)
	if err != nil {
		o.err = err
		return o
	}
	o.turns, o.merges = len(p.Turns), merges
	// A_i is shared by the trajectory's items (grpo), or split over its
	// |T_i| step items (stepo), whose sum is then A_i (eq. 11).
	adv, err := advantage.StepAdvantage(advs[t.TrajectoryID], max(len(items), 1), cfg.AdvantageMode())
	if err != nil {
		o.err = fmt.Errorf("trajectory %s: %w", t.TrajectoryID, err)
		return o
	}
	o.rows = make([]schemas.Segment, len(items))
	tok := cfg.TokenizerInfo.String()
	for i, it := range items {
		blobs := make([]string, len(it.ImageTurns))
		for k, turn := range it.ImageTurns {
			blobs[k] = p.Turns[turn].Image
		}
		o.rows[i] = schemas.Segment{
			SegmentID: fmt.Sprintf("%s/%s/%04d", t.TrajectoryID, cfg.Mode, i), TrajectoryID: t.TrajectoryID,
			TaskID: t.TaskID, GroupID: t.GroupID, Index: int32(i), Mode: string(cfg.Mode),
			InputIDs: it.IDs, LossMask: it.Mask, Logprobs: it.Logp, HasLogprobs: it.HasLogprobs,
			Images: int32(it.Images), ImageBlobs: blobs, Tokens: int32(len(it.IDs)), ImageTokens: int32(it.ImageTokens),
			TrainableTokens: int32(it.Trainable), FirstStep: p.Turns[it.First].Step, LastStep: p.Turns[it.Last].Step,
			TrajectorySteps: int32(len(p.Turns)), Reward: t.Reward, Advantage: adv, PolicyVersion: t.PolicyVersion, Tokenizer: tok,
		}
	}
	return o
}

// stepTree projects the steps table on what the pointer view needs to know
// before segmenting: which trees it will have to render.
type stepTree struct {
	A11y      string  `parquet:"a11y"`
	PromptIDs []int32 `parquet:"prompt_ids,list"`
}

var stepTreeTable = &schemas.Table[stepTree]{Name: schemas.Steps.Name}

// treeSource returns the accessibility trees the view needs: in the pointer
// view, those of the steps without recorded prompt ids (scripted policies,
// imported logs), read in one scan of the blobs table and kept in memory;
// nil otherwise.
func treeSource(ctx context.Context, l *lake.Lake, m *lake.Manifest, v View) (func(*schemas.Step) ([]byte, error), error) {
	if !v.pointer() {
		return nil, nil
	}
	want := map[string]bool{}
	err := lake.ScanTable(ctx, l, m, stepTreeTable, 4096, func(rows []stepTree) error {
		for i := range rows {
			if len(rows[i].PromptIDs) == 0 && rows[i].A11y != "" {
				want[rows[i].A11y] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	trees := map[string][]byte{}
	if len(want) > 0 {
		if trees, err = lake.BlobsByHash(ctx, l, m, want); err != nil {
			return nil, fmt.Errorf("the pointer view's accessibility trees: %w", err)
		}
	}
	return func(st *schemas.Step) ([]byte, error) {
		t, ok := trees[st.A11y]
		if !ok {
			return nil, fmt.Errorf("accessibility tree %s is not in the blobs table", st.A11y)
		}
		return t, nil
	}, nil
}

// imageSizer returns the size of a step's screenshot from the blobs table
// (read without the blobs' bytes); with a fixed token count no size is
// needed and the blobs are not read.
func imageSizer(ctx context.Context, l *lake.Lake, m *lake.Manifest, spec ImageSpec) (func(*schemas.Step) (int, int, error), error) {
	if spec.FixedTokens > 0 {
		return func(*schemas.Step) (int, int, error) { return 0, 0, nil }, nil
	}
	type dims struct{ w, h int32 }
	byHash := map[[32]byte]dims{}
	err := lake.ScanTable(ctx, l, m, blobDimsTable, 4096, func(rows []blobDims) error {
		for i := range rows {
			if k, ok := hashKey(rows[i].Hash); ok {
				byHash[k] = dims{rows[i].Width, rows[i].Height}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func(st *schemas.Step) (int, int, error) {
		if st.Observation == "" {
			return 0, 0, errors.New("no screenshot recorded (set --image-tokens for data without images)")
		}
		k, ok := hashKey(st.Observation)
		d, found := byHash[k]
		if !ok || !found {
			return 0, 0, fmt.Errorf("screenshot blob %s is not in the blobs table (set --image-tokens for data without images)", st.Observation)
		}
		if d.w <= 0 || d.h <= 0 {
			return 0, 0, fmt.Errorf("blob %s has no width and height: not an image", st.Observation)
		}
		return int(d.w), int(d.h), nil
	}, nil
}

func hashKey(h string) ([32]byte, bool) {
	var k [32]byte
	if len(h) != 64 {
		return k, false
	}
	if _, err := hex.Decode(k[:], []byte(h)); err != nil {
		return k, false
	}
	return k, true
}

func reject(e *Error, t *schemas.Trajectory) schemas.Reject {
	raw, _ := json.Marshal(t)
	return schemas.Reject{Stage: Stage, Source: "trajectories/" + e.TrajectoryID, Line: e.Step,
		Table: schemas.Segments.Name, Field: e.Field, Reason: e.Error(), Raw: string(raw)}
}

func (s *Summary) add(p *Params, o outcome) {
	if o.turns == 0 {
		s.Empty++
		return
	}
	s.Trajectories++
	s.Turns += int64(o.turns)
	s.Merges += int64(o.merges)
	s.Expected.Items += int64(ExpectedItems(*p, o.turns))
	s.Expected.Trajectory++
	s.Expected.Step += int64(o.turns)
	win := *p
	if win.Mode != ModeWindow {
		win.K, win.Delta = DefaultK, DefaultDelta
	}
	win.Mode = ModeWindow
	s.Expected.Window += int64(ExpectedItems(win, o.turns))
	for i := range o.rows {
		r := &o.rows[i]
		s.Items++
		s.Tokens += int64(r.Tokens)
		s.ImageTokens += int64(r.ImageTokens)
		s.Trainable += int64(r.TrainableTokens)
		s.Images += int64(r.Images)
		s.MaxTokens = max(s.MaxTokens, int(r.Tokens))
		s.MaxImages = max(s.MaxImages, int(r.Images))
		if !r.HasLogprobs {
			s.WithoutLogprobs++
		}
	}
}

func (s *Summary) finish(p *Params, files int) {
	s.Files = files
	if s.Items > 0 {
		s.TokensPerItem = float64(s.Tokens) / float64(s.Items)
		s.ImagesPerItem = float64(s.Images) / float64(s.Items)
	}
	if s.Trajectories > 0 {
		s.ItemsPerTraj = float64(s.Items) / float64(s.Trajectories)
		s.TurnsPerTraj = float64(s.Turns) / float64(s.Trajectories)
	}
	switch p.Mode {
	case ModeTrajectory:
		s.Expected.Order, s.Expected.Formula = "O(n)", "1 per trajectory"
	case ModeStep:
		s.Expected.Order, s.Expected.Formula = "O(nT)", "T per trajectory"
	case ModeWindow:
		s.Expected.Order = "O(nT/K)"
		s.Expected.Formula = fmt.Sprintf("1 + ceil(max(0, T - %d) / %d) per trajectory", p.K+p.Delta, p.Delta)
	}
}
