package stage

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cualake/cualake/pipeline/advantage"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/segment"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer"
	"github.com/cualake/cualake/trainer/agent"
	"github.com/cualake/cualake/trainer/causal"
)

// CausalMime marks causal-policy checkpoint blobs.
const CausalMime = "application/vnd.cualake.causal-policy"

// The policy names train knows.
const (
	PolicyCausal = "causal" // trainer/causal: decoder-only over the segments' token streams; the only policy
	PolicyEncDec = "encdec" // the encoder-decoder, removed after commit 7878f89: refused with ErrEncDecRemoved
)

// ErrEncDecRemoved is the error for the encoder-decoder policy: asking for
// it, or loading one of its checkpoints.
var ErrEncDecRemoved = errors.New("the encoder-decoder policy (encdec) was removed (last present in commit 7878f89) so that one item format, " +
	"the segments row, feeds SFT and RL; the causal policy is the one (--policy causal, the default)")

// encDecMagic starts the removed encoder-decoder's checkpoints, so that an
// old lake's checkpoint is named as such rather than as unreadable bytes.
const encDecMagic = "cualake-policy\x00"

// CheckPolicy accepts the policy names a fresh SFT can create: causal, or
// "" for it; encdec is ErrEncDecRemoved.
func CheckPolicy(name string) error {
	switch name {
	case PolicyCausal, "":
		return nil
	case PolicyEncDec:
		return fmt.Errorf("--policy %s: %w", name, ErrEncDecRemoved)
	}
	return fmt.Errorf("--policy %q: want %s", name, PolicyCausal)
}

// CheckCheckpoint says whether a checkpoint row's blob is one the causal
// policy loads: an encoder-decoder checkpoint (a lake trained before the
// removal) is ErrEncDecRemoved naming the checkpoint, other bytes an error
// naming it.
func CheckCheckpoint(ck *schemas.Checkpoint, data []byte) error {
	switch {
	case causal.IsCheckpoint(data):
		return nil
	case bytes.HasPrefix(data, []byte(encDecMagic)):
		return fmt.Errorf("checkpoint v%d (blob %s) is an encoder-decoder checkpoint, which this build cannot load: %w; train a causal one with `cualake train --objective sft`",
			ck.Version, short(ck.Blob), ErrEncDecRemoved)
	}
	return fmt.Errorf("checkpoint v%d (blob %s) is not a causal-policy checkpoint (%d bytes)", ck.Version, short(ck.Blob), len(data))
}

// IsDemonstration says which trajectories supervised warm start imitates:
// successful ones from the warm-start source or from the oracle policy,
// never held-out evaluation episodes.
func IsDemonstration(t *schemas.Trajectory) bool {
	return t.Outcome == schemas.OutcomeSuccess && t.Source != "eval" && (t.Source == "warmstart" || t.Policy == "oracle")
}

// segmentRows reads the segments of the trajectories keep selects, cloning
// their arrays, and names the snapshot that wrote the table.
func segmentRows(ctx context.Context, l *lake.Lake, m *lake.Manifest, keep map[string]bool) ([]schemas.Segment, string, error) {
	if _, ok := m.Tables[schemas.Segments.Name]; !ok {
		return nil, "", nil
	}
	var out []schemas.Segment
	err := lake.ScanTable(ctx, l, m, schemas.Segments, 256, func(rows []schemas.Segment) error {
		for i := range rows {
			r := rows[i]
			if !keep[r.TrajectoryID] {
				continue
			}
			r.InputIDs, r.LossMask, r.Logprobs = slices.Clone(r.InputIDs), slices.Clone(r.LossMask), slices.Clone(r.Logprobs)
			r.ImageBlobs = slices.Clone(r.ImageBlobs)
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	from, err := segmentsSnapshot(ctx, l, m)
	return out, from, err
}

// segmentsSnapshot walks back from m to the snapshot whose commit last
// changed the segments table.
func segmentsSnapshot(ctx context.Context, l *lake.Lake, m *lake.Manifest) (string, error) {
	for cur := m; cur != nil; {
		if slices.Contains(cur.Changed, schemas.Segments.Name) {
			return cur.ID, nil
		}
		if cur.Parent == "" {
			break
		}
		next, err := l.Snapshot(ctx, cur.Parent)
		if err != nil {
			return "", fmt.Errorf("finding the segments' snapshot: %w", err)
		}
		cur = next
	}
	return "", nil
}

// segmentCommand is the command that makes the segments a causal model of
// cfg reads.
func segmentCommand(cfg causal.Config) string {
	return fmt.Sprintf("cualake segment --view pointer --image-tokens %d --mode window --k 5 --delta 5", cfg.ImageTokens())
}

// checkSegments checks what train needs of its rows beyond the schema: the
// same tokenizer everywhere (want, when set), streams whose screenshots take
// the model's image tokens and name their blobs, and equal lengths.
func checkSegments(rows []schemas.Segment, want string, cfg causal.Config, sp causal.Special) error {
	for i := range rows {
		r := &rows[i]
		if want != "" && r.Tokenizer != want {
			return fmt.Errorf("segment %q was cut with tokenizer %q, the checkpoint reads %q: segment again with the checkpoint's tokenizer",
				r.SegmentID, r.Tokenizer, want)
		}
		if len(r.LossMask) != len(r.InputIDs) || len(r.Logprobs) != len(r.InputIDs) {
			return fmt.Errorf("segment %q: input_ids, loss_mask and logprobs have lengths %d, %d, %d; want equal",
				r.SegmentID, len(r.InputIDs), len(r.LossMask), len(r.Logprobs))
		}
		blocks, pads := 0, 0
		for _, id := range r.InputIDs {
			switch id {
			case sp.VisionStart:
				blocks++
				pads = 0
			case sp.ImagePad:
				pads++
			case sp.VisionEnd:
				if pads != cfg.ImageTokens() {
					return fmt.Errorf("segment %q: a screenshot takes %d image tokens, the causal policy reads %d: run `%s`",
						r.SegmentID, pads, cfg.ImageTokens(), segmentCommand(cfg))
				}
			}
		}
		if len(r.ImageBlobs) != blocks {
			return fmt.Errorf("segment %q names %d screenshot blobs for %d screenshots (segments written before image_blobs existed: segment again)",
				r.SegmentID, len(r.ImageBlobs), blocks)
		}
		for _, h := range r.ImageBlobs {
			if h == "" {
				return fmt.Errorf("segment %q shows a screenshot that was never recorded (a --tree-only rollout): the causal policy reads pixels", r.SegmentID)
			}
		}
	}
	return nil
}

// patchCache turns screenshot blobs into the model's patches, once each.
type patchCache map[string][][]float32

// loadPatches decodes the screenshots of rows (and fetches the extra blobs,
// e.g. checkpoints, in the same scan of the blobs table), on all cores.
func loadPatches(ctx context.Context, l *lake.Lake, m *lake.Manifest, cfg causal.Config, rows []schemas.Segment, extra ...string) (patchCache, map[string][]byte, error) {
	want := map[string]bool{}
	for i := range rows {
		for _, h := range rows[i].ImageBlobs {
			want[h] = true
		}
	}
	for _, h := range extra {
		want[h] = true
	}
	blobs, err := lake.BlobsByHash(ctx, l, m, want)
	if err != nil {
		return nil, nil, err
	}
	var hashes []string
	for i := range rows {
		for _, h := range rows[i].ImageBlobs {
			hashes = append(hashes, h)
		}
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	out := make(patchCache, len(hashes))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	next := make(chan string)
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range next {
				p, err := cfg.Patches(blobs[h])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("screenshot blob %s: %w", h, err)
				}
				out[h] = p
				mu.Unlock()
			}
		}()
	}
	for _, h := range hashes {
		next <- h
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, nil, firstErr
	}
	for _, h := range hashes {
		delete(blobs, h) // keep only the extras
	}
	return out, blobs, nil
}

// SegmentItems turns segments rows of snapshot m into the items a causal
// model of cfg trains on, its screenshots decoded from the blobs table.
func SegmentItems(ctx context.Context, l *lake.Lake, m *lake.Manifest, cfg causal.Config, rows []schemas.Segment) ([]causal.Item, error) {
	pc, _, err := loadPatches(ctx, l, m, cfg, rows)
	if err != nil {
		return nil, err
	}
	out := make([]causal.Item, len(rows))
	for i := range rows {
		out[i] = ItemFromSegment(&rows[i], pc)
	}
	return out, nil
}

// ItemFromSegment is the training item of a segments row: its ids, mask,
// log-probabilities and advantage as they are, and its screenshots'
// patches from pc.
func ItemFromSegment(r *schemas.Segment, pc patchCache) causal.Item {
	it := causal.Item{ID: r.SegmentID, Group: r.GroupID, IDs: r.InputIDs, Mask: r.LossMask, Logp: r.Logprobs,
		HasLogp: r.HasLogprobs, Advantage: float32(r.Advantage)}
	for _, h := range r.ImageBlobs {
		it.Images = append(it.Images, pc[h])
	}
	return it
}

// buildIDMap is the compact vocabulary of a fresh causal model: the template
// tokens, every trained token of the demonstrations, and every context
// token that occurs in at least agent.MinTasks of their tasks. Rarer
// context tokens (instance-specific names and values) read as <unk>, so
// held-out tasks' unseen words look like the training tasks' rare ones.
func buildIDMap(rows []schemas.Segment, sp causal.Special) (*causal.IDMap, error) {
	ids := slices.Clone([]int32{sp.ImStart, sp.ImEnd, sp.VisionStart, sp.VisionEnd, sp.ImagePad})
	tasks := map[int32]map[string]bool{}
	for i := range rows {
		r := &rows[i]
		for k, id := range r.InputIDs {
			if r.LossMask[k] == 1 {
				ids = append(ids, id)
				continue
			}
			if tasks[id] == nil {
				tasks[id] = map[string]bool{}
			}
			tasks[id][r.TaskID] = true
		}
	}
	for id, ts := range tasks {
		if len(ts) >= agent.MinTasks {
			ids = append(ids, id)
		}
	}
	return causal.NewIDMap(ids)
}

// specialIDs looks up the template tokens in the tokenizer.
func specialIDs(tok tokenizer.Encoder) (causal.Special, error) {
	c, err := segment.NewCodec(tok)
	if err != nil {
		return causal.Special{}, err
	}
	return causal.Special{ImStart: c.ImStart, ImEnd: c.ImEnd, VisionStart: c.VisionStart, VisionEnd: c.VisionEnd, ImagePad: c.ImagePad}, nil
}

// DefaultTokenizer loads the Qwen3 tokenizer the segment stage uses by
// default, with the name segments.tokenizer records for it.
func DefaultTokenizer() (*tokenizer.Tokenizer, string, error) {
	path, err := tokenizer.DefaultPath()
	if err != nil {
		return nil, "", err
	}
	tok, info, err := segment.LoadTokenizer(path)
	if err != nil {
		return nil, "", err
	}
	return tok, info.String(), nil
}

// imitated picks the trajectories a supervised run trains on: the
// demonstrations, and for rft the policy's successes, at most p.PerTask of
// them per task (0: all), so that easy tasks (8 successes of 8) do not
// outweigh the hard ones: those with the smallest seed-keyed hash of their
// id, or with --pick shortest the fewest steps first (ties by that hash);
// rft's imitate option keeps only one of the two. newest is the newest
// iteration of the policy's successes, imitated or not (-1 for sft): the
// checkpoint's iteration, so a demonstrations-only round is still numbered
// by the round it stands in for.
func imitated(ctx context.Context, l *lake.Lake, m *lake.Manifest, rft bool, p Params) (picked map[string]bool, demos, successes int, newest int32, err error) {
	type success struct {
		id    string
		steps int32
	}
	picked, newest = map[string]bool{}, -1
	byTask := map[string][]success{}
	err = lake.ScanTable(ctx, l, m, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
		for i := range rows {
			t := &rows[i]
			switch {
			case t.Steps == 0:
			case IsDemonstration(t):
				if !rft || p.Imitate != ImitateSuccesses {
					picked[t.TrajectoryID] = true
					demos++
				}
			case rft && t.PolicySuccess(): // beside the demonstrations, the policy's own verified successes
				newest = max(newest, t.Iteration)
				if p.Imitate != ImitateDemos {
					byTask[t.TaskID] = append(byTask[t.TaskID], success{t.TrajectoryID, t.Steps})
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, 0, -1, err
	}
	key := func(id string) string { return schemas.HashBytes([]byte(fmt.Sprintf("%d/%s", p.Seed, id))) }
	for _, ss := range byTask {
		if p.PerTask > 0 && len(ss) > p.PerTask {
			slices.SortFunc(ss, func(a, b success) int {
				if p.Pick == PickShortest && a.steps != b.steps {
					return cmp.Compare(a.steps, b.steps)
				}
				return strings.Compare(key(a.id), key(b.id))
			})
			ss = ss[:p.PerTask]
		}
		for _, s := range ss {
			picked[s.id] = true
			successes++
		}
	}
	return picked, demos, successes, newest, nil
}

// runCausalSFT is the supervised run: --objective sft creates a fresh model
// and imitates the demonstrations; --objective rft continues prev and
// imitates the demonstrations and the policy's own verified successes
// (rejection-sampling fine-tuning), through the same loss and item format.
func runCausalSFT(ctx context.Context, l *lake.Lake, m *lake.Manifest, p Params, prev *schemas.Checkpoint) (*Output, error) {
	rft := p.Objective == ObjectiveRFT
	what := "train --objective " + p.Objective
	picked, nDemos, successes, iteration, err := imitated(ctx, l, m, rft, p)
	if err != nil {
		return nil, err
	}
	if rft && iteration < 0 {
		return nil, fmt.Errorf("%s: snapshot %s holds no successful training rollouts of the policy (run `cualake rollout --policy checkpoint --split train` first)", what, short(m.ID))
	}
	if nDemos == 0 && (!rft || p.Imitate == ImitateDemos) {
		return nil, fmt.Errorf("%s: no successful demonstrations (run `cualake rollout --policy oracle` first)", what)
	}
	cfg := causal.DefaultConfig(2)
	rows, from, err := segmentRows(ctx, l, m, picked)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: snapshot %s holds no segments for its %d trajectories to imitate: run `%s` first",
			what, short(m.ID), len(picked), segmentCommand(cfg))
	}
	have := map[string]bool{}
	for i := range rows {
		have[rows[i].TrajectoryID] = true
	}
	for _, id := range slices.Sorted(maps.Keys(picked)) {
		if !have[id] {
			return nil, fmt.Errorf("%s: trajectory %s has no segments (the segments table predates it): run `%s` again",
				what, id, segmentCommand(cfg))
		}
	}
	var model *causal.Model
	if rft {
		if model, err = LoadCausal(ctx, l, m, prev, p.Device); err != nil {
			return nil, err
		}
		cfg = model.Config()
		if err := checkSegments(rows, model.Tokenizer(), cfg, model.Special()); err != nil {
			model.Close()
			return nil, err
		}
	}
	if !rft || p.Restart {
		if model != nil {
			// A restart keeps the newest checkpoint's shape (cfg; its
			// vocabulary is built again from the rows), not its weights.
			model.Close()
		}
		if model, cfg, err = freshCausal(rows, cfg, p); err != nil {
			return nil, err
		}
	}
	defer model.Close()
	pc, _, err := loadPatches(ctx, l, m, cfg, rows)
	if err != nil {
		return nil, err
	}
	items := make([]causal.Item, len(rows))
	for i := range rows {
		items[i] = ItemFromSegment(&rows[i], pc)
		if err := items[i].Check(); err != nil {
			return nil, err
		}
		if err := knownTrained(model, items[i]); err != nil {
			return nil, err
		}
	}
	lr := p.LR
	opt, err := trainer.NewOptimizerOver(model.Parameters(), lr)
	if err != nil {
		return nil, err
	}
	defer opt.Close()
	version, parent := nextVersion(prev)
	out := &Output{Items: len(items), Mode: rows[0].Mode, SegmentsFrom: from, Demonstrations: nDemos, Successes: successes}
	countTokens(out, rows)
	var weights []float64
	if p.Balance == BalanceActions {
		if weights, out.ActionGroups, err = ActionWeights(rows); err != nil {
			return nil, err
		}
	}
	draw := newItemDrawer(rand.New(rand.NewPCG(uint64(p.Seed), 0x5f7)), len(items), weights)
	sopts := causal.SFTOptions{MaxGradNorm: trainer.DefaultMaxGradNorm, ContextWeight: CausalSFTContextWeight, Dropout: p.Dropout}
	t0 := time.Now()
	for step := 0; step < p.Steps; step++ {
		sopts.DropoutSeed = uint64(p.Seed)<<20 ^ uint64(step) // each step's masks its own
		if err := opt.SetLR(cosineLR(lr, step, p.Steps)); err != nil {
			return nil, err
		}
		batch := make([]causal.Item, 0, p.Batch)
		for len(batch) < min(p.Batch, len(items)) {
			batch = append(batch, items[draw.next()])
		}
		sm, err := causal.SFTStep(model, opt, batch, sopts)
		if err != nil {
			return nil, fmt.Errorf("train sft step %d: %w", step, err)
		}
		out.Metrics = append(out.Metrics, schemas.TrainMetric{Version: version, Step: int32(step), Objective: p.Objective,
			Loss: sm.Loss, PolicyLoss: sm.Loss, GradNorm: finite(sm.GradNorm), Tokens: int64(sm.Tokens), Items: int32(len(batch))})
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.stepDone(step)
	}
	out.TrainSeconds = time.Since(t0).Seconds()
	return finishCausal(model, out, version, parent, p.Objective, p, iteration)
}

// freshCausal creates the model a fresh SFT trains: its compact vocabulary
// is the demonstrations' (buildIDMap).
func freshCausal(rows []schemas.Segment, cfg causal.Config, p Params) (*causal.Model, causal.Config, error) {
	tok, tokName, err := DefaultTokenizer()
	if err != nil {
		return nil, cfg, err
	}
	sp, err := specialIDs(tok)
	if err != nil {
		return nil, cfg, err
	}
	if err := checkSegments(rows, tokName, cfg, sp); err != nil {
		return nil, cfg, err
	}
	ids, err := buildIDMap(rows, sp)
	if err != nil {
		return nil, cfg, err
	}
	cfg.VocabSize = ids.Size()
	if p.Dim > 0 {
		cfg.Dim, cfg.FFNDim = p.Dim, 4*p.Dim
	}
	if p.Layers > 0 {
		cfg.Layers = p.Layers
	}
	if err := cfg.Validate(); err != nil {
		return nil, cfg, fmt.Errorf("train --dim %d --layers %d: %w", p.Dim, p.Layers, err)
	}
	dev, err := trainer.Device(p.Device)
	if err != nil {
		return nil, cfg, err
	}
	model, err := causal.New(cfg, ids, sp, tokName, dev, uint64(p.Seed))
	return model, cfg, err
}

// knownTrained checks that every trained token of it is in model's
// vocabulary: a continued model (rft, grpo) cannot learn a token it has no
// embedding for, and its own samples never hold one.
func knownTrained(model *causal.Model, it causal.Item) error {
	for _, k := range it.Trainable() {
		if !model.IDs().Known(it.IDs[k]) {
			return fmt.Errorf("segment %q: trained token %d (id %d) is not in the checkpoint's id map (not sampled by this policy?)",
				it.ID, k, it.IDs[k])
		}
	}
	return nil
}

// CausalSFTContextWeight weighs the causal warm start's auxiliary
// next-token loss on the context tokens (causal.SFTOptions.ContextWeight).
// The segments' trained tokens are 2.4% of their tokens (the responses);
// predicting the rest too (the instruction's word markers, the screens'
// element lists, which repeat from turn to turn) gives the small model the
// lookups its pointers need, and lifted held-out success after the warm
// start from 7.7% to 13.8% at the same steps (docs/learning.md, "Every
// measurement").
const CausalSFTContextWeight = 0.3

// CausalDropout is the supervised objectives' dropout (train --dropout's
// default for sft and rft: make demo's setting). On a quarter of the
// training tasks' demonstrations the warm start fits them to about 0.02
// nats a token in 400 steps; with dropout 0.1 in the warm start and the
// RFT rounds, make demo's config ends round 3 at 59.2% +- 5.2 held-out
// over seeds 1-9 against 54.4% +- 6.7 without, higher at 8 of the 9 seeds
// (examples/experiments/dropout.yaml). With every task demonstrated the
// same 400 steps see each segment a third as often and dropout lowers the
// warm start, so `cualake run`'s default loop sets 0 (docs/experiments.md,
// "Dropout").
const CausalDropout = 0.1

// DefaultDropout is train --dropout's default for objective: CausalDropout
// for sft and rft, 0 for grpo (which refuses any).
func DefaultDropout(objective string) float64 {
	if objective == "grpo" {
		return 0
	}
	return CausalDropout
}

// cosineLR is the causal warm start's rate at step of n: a linear warm-up
// over the first 5% of the steps, then a cosine decay from peak to a tenth
// of it (a constant rate left the loss noisy to the end).
func cosineLR(peak float64, step, n int) float64 {
	warm := max(1, n/20)
	if step < warm {
		return peak * float64(step+1) / float64(warm)
	}
	f := float64(step-warm) / float64(max(1, n-warm))
	return peak * (0.1 + 0.9*0.5*(1+math.Cos(math.Pi*f)))
}

func countTokens(out *Output, rows []schemas.Segment) {
	for i := range rows {
		out.Tokens += int64(rows[i].Tokens)
		out.TrainableTokens += int64(rows[i].TrainableTokens)
	}
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// LoadCausal loads a checkpoint row's causal model.
func LoadCausal(ctx context.Context, l *lake.Lake, m *lake.Manifest, ck *schemas.Checkpoint, device string) (*causal.Model, error) {
	b, err := lake.Blob(ctx, l, m, ck.Blob)
	if err != nil {
		return nil, fmt.Errorf("checkpoint v%d: %w", ck.Version, err)
	}
	return loadCausalBytes(b.Bytes, ck, device)
}

func loadCausalBytes(data []byte, ck *schemas.Checkpoint, device string) (*causal.Model, error) {
	if err := CheckCheckpoint(ck, data); err != nil {
		return nil, err
	}
	dev, err := trainer.Device(device)
	if err != nil {
		return nil, err
	}
	model, err := causal.Load(data, dev)
	if err != nil {
		return nil, fmt.Errorf("checkpoint v%d: %w", ck.Version, err)
	}
	return model, nil
}

func runCausalGRPO(ctx context.Context, l *lake.Lake, m *lake.Manifest, p Params, prev *schemas.Checkpoint) (*Output, error) {
	refRow, err := firstSFT(ctx, l, m)
	if err != nil {
		return nil, err
	}
	set, err := SelectTrainSet(ctx, l, m, prev.Version, prev.Version+1, p.MaxStale)
	if err != nil {
		return nil, err
	}
	newest, kept := set.Newest, set.Trajectories
	keep := map[string]bool{}
	for _, t := range kept {
		keep[t.TrajectoryID] = true
	}
	rows, from, err := segmentRows(ctx, l, m, keep)
	if err != nil {
		return nil, err
	}
	if len(kept) > 0 && len(rows) == 0 {
		return nil, fmt.Errorf("train --objective grpo: snapshot %s holds no segments for iteration %d's %d rollouts: run `%s` first",
			short(m.ID), newest, len(kept), segmentCommand(causal.DefaultConfig(2)))
	}
	if err := completeGroups(kept, rows); err != nil {
		return nil, err
	}
	// one scan of the blobs table for both checkpoints and every screenshot
	probe, err := lake.BlobsByHash(ctx, l, m, map[string]bool{prev.Blob: true})
	if err != nil {
		return nil, err
	}
	model, err := loadCausalBytes(probe[prev.Blob], prev, p.Device)
	if err != nil {
		return nil, err
	}
	defer model.Close()
	cfg := model.Config()
	if err := checkSegments(rows, model.Tokenizer(), cfg, model.Special()); err != nil {
		return nil, err
	}
	pc, extra, err := loadPatches(ctx, l, m, cfg, rows, refRow.Blob)
	if err != nil {
		return nil, err
	}
	ref, err := loadCausalBytes(extra[refRow.Blob], refRow, p.Device)
	if err != nil {
		return nil, err
	}
	defer ref.Close()
	var items []causal.Item
	for i := range rows {
		if rows[i].Advantage == 0 {
			continue // no gradient: a zero-variance group, or an average outcome
		}
		it := ItemFromSegment(&rows[i], pc)
		if err := it.Check(); err != nil {
			return nil, err
		}
		if err := knownTrained(model, it); err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	version, parent := nextVersion(prev)
	out := &Output{Items: len(items), Dropped: set.Dropped, DroppedGroups: set.DroppedGroups, Replayed: set.Replayed, Groups: set.Groups, SegmentsFrom: from}
	if len(rows) > 0 {
		out.Mode = rows[0].Mode
	}
	for i := range rows {
		if rows[i].Advantage != 0 {
			out.Tokens += int64(rows[i].Tokens)
			out.TrainableTokens += int64(rows[i].TrainableTokens)
		}
	}
	if len(items) == 0 {
		return finishCausal(model, out, version, parent, "grpo", p, newest)
	}
	t0 := time.Now()
	group := func(it causal.Item) string { return it.Group }
	var mbs [][]causal.Item
	if p.Groups > 0 {
		mbs, err = advantage.MiniGroupsByCount(items, group, p.Groups)
	} else {
		mbs, err = advantage.MiniGroups(items, group, p.Batch)
	}
	if err != nil {
		return nil, fmt.Errorf("train --mini-groups %d: %w", p.Groups, err)
	}
	// The reference is frozen and the steps cycle over the mini-batches, so
	// its log-probabilities are computed once per mini-batch item, not once
	// per step, and only for the mini-batches some step trains (an item that
	// --mini-groups repeats in the last mini-batch is computed twice).
	for i := 0; i < min(p.Steps, len(mbs)); i++ {
		if err := ref.FillRefLogp(ctx, mbs[i], p.Temperature); err != nil {
			return nil, fmt.Errorf("train grpo: %w", err)
		}
	}
	lr := p.LR
	opt, err := trainer.NewOptimizerOver(model.Parameters(), lr)
	if err != nil {
		return nil, err
	}
	defer opt.Close()
	gopts := trainer.DefaultGRPOOptions()
	gopts.Temperature = p.Temperature
	gopts.Agg = lossAggregation(p.Advantage)
	for step := 0; step < p.Steps; step++ {
		mb := mbs[step%len(mbs)]
		var advs []float64
		for _, it := range mb {
			advs = append(advs, float64(it.Advantage))
		}
		gm, err := causal.GRPOStep(model, ref, opt, mb, gopts)
		if err != nil {
			return nil, fmt.Errorf("train grpo step %d: %w", step, err)
		}
		out.Metrics = append(out.Metrics, grpoMetric(version, step, p.Advantage, gm, advs, len(mb)))
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.stepDone(step)
	}
	out.TrainSeconds = time.Since(t0).Seconds()
	return finishCausal(model, out, version, parent, "grpo", p, newest)
}

// completeGroups checks that every kept rollout with steps has segments,
// so each group trains whole: a missing one is an error naming a segment of
// its group (the segments table predates part of the batch).
func completeGroups(kept []schemas.Trajectory, rows []schemas.Segment) error {
	has := map[string]bool{}
	byGroup := map[string]string{}
	for i := range rows {
		has[rows[i].TrajectoryID] = true
		if _, ok := byGroup[rows[i].GroupID]; !ok {
			byGroup[rows[i].GroupID] = rows[i].SegmentID
		}
	}
	sort.Slice(kept, func(a, b int) bool { return kept[a].TrajectoryID < kept[b].TrajectoryID })
	for _, t := range kept {
		if t.Steps == 0 || has[t.TrajectoryID] {
			continue
		}
		if sid, ok := byGroup[t.GroupID]; ok {
			return fmt.Errorf("segment %q: its group %s is incomplete: rollout %s has no segments (segment the snapshot again)", sid, t.GroupID, t.TrajectoryID)
		}
		return fmt.Errorf("group %s has no segments for rollout %s (segment the snapshot again)", t.GroupID, t.TrajectoryID)
	}
	return nil
}

func finishCausal(model *causal.Model, out *Output, version, parent int32, objective string, p Params, iteration int32) (*Output, error) {
	data, err := model.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return seal(out, data, CausalMime, version, parent, objective, p, iteration), nil
}

// lossAggregation is the loss aggregation of an advantage mode. STEPO (eq.
// 13) and naive step-level GRPO (eq. 7) both take the token mean of each
// step item and sum over the items, so that the two differ only in the
// advantage each step carries (A_i/|T_i| against A_i), as in EvoCUA-1.5's
// comparison; grpo is the token mean over the batch (ScaleCUA eq. 3, DAPO).
func lossAggregation(adv string) trainer.Aggregation {
	if adv == agent.AdvSTEPO || adv == agent.AdvNaive {
		return trainer.ItemSumTokenMean
	}
	return trainer.TokenMean
}
