package sample

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// Sampler names, as stored in batches.sampler.
const (
	NameUniform    = "uniform"
	NameFrontier   = "frontier"
	NameDTAC       = "dtac"
	NameCurriculum = "curriculum"
	NameDAPO       = "dapo"
)

// Batch channels, as stored in batches.channel (schemas.BatchChannels).
const (
	ChannelFrontier   = "frontier"
	ChannelUniform    = "uniform"
	ChannelVAS        = "vas"
	ChannelAdaPR      = "adapr"
	ChannelICS        = "ics"
	ChannelCurriculum = "curriculum"
	ChannelDAPO       = "dapo"
)

// Request says what batch to choose.
type Request struct {
	// Iteration is the iteration the batch is for (batches.iteration).
	Iteration int32
	// BatchSize is B, the number of tasks to choose (DAPO chooses
	// ceil(OverSample * B)).
	BatchSize int
	// Seed is the run's seed; the stream also depends on the sampler name,
	// Iteration and Round.
	Seed uint64
	// Round numbers refill rounds within one iteration (DAPO dynamic
	// sampling); 0 for the first selection.
	Round int32
	// FirstRank is the rank of the first pick, so that refill rounds append
	// to an iteration's batch without reusing a (iteration, rank) key.
	FirstRank int32
	// Exclude lists tasks that must not be picked (tasks already drawn by an
	// earlier round of the same iteration).
	Exclude map[string]bool
}

// Sampler chooses the tasks of one iteration.
type Sampler interface {
	// Name is the sampler's name (batches.sampler).
	Name() string
	// Select chooses a batch from pool, the current pass-rate state (one row
	// per task, as UpdateEMA returns it). Only rows with InPool are
	// eligible. The rows come back sorted by rank. Errors: BatchSize < 1, no
	// eligible task, more tasks asked for than eligible, rates outside
	// [0, 1], duplicate tasks.
	Select(pool []schemas.PassRate, req Request) ([]schemas.Batch, error)
	// Weight is the task's sampling weight for the pass_rates.weight column;
	// false when the sampler gives the task no weight.
	Weight(r *schemas.PassRate) (float64, bool)
}

// FillWeights sets each row's Weight from the sampler (nil where it has
// none). The weights share one allocation.
func FillWeights(rows []schemas.PassRate, s Sampler) {
	slab := make([]float64, len(rows))
	for i := range rows {
		if w, ok := s.Weight(&rows[i]); ok {
			slab[i] = w
			rows[i].Weight = &slab[i]
		} else {
			rows[i].Weight = nil
		}
	}
}

// view is the eligible part of a pool in task-id order.
type view struct {
	pool []schemas.PassRate
	// idx lists eligible rows (InPool, not excluded) as indices into pool,
	// in ascending task id.
	idx []int32
}

func (v *view) row(i int) *schemas.PassRate { return &v.pool[v.idx[i]] }
func (v *view) n() int                      { return len(v.idx) }

// newView validates the request and the pool and returns the eligible rows
// in task-id order. Ordering by task id makes the batch independent of the
// input's row order; a pool already sorted (as the lake stores it) costs one
// linear check.
func newView(pool []schemas.PassRate, req Request) (*view, error) {
	if req.BatchSize < 1 {
		return nil, fmt.Errorf("%w: batch size is %d, want >= 1", ErrBatchSize, req.BatchSize)
	}
	v := &view{pool: pool, idx: make([]int32, 0, len(pool))}
	add := func(i int32) error {
		r := &pool[i]
		if !r.InPool || (len(req.Exclude) > 0 && req.Exclude[r.TaskID]) {
			return nil
		}
		if r.EMA != nil && !(*r.EMA >= 0 && *r.EMA <= 1) {
			return fmt.Errorf("%w: task %q: ema %v outside [0, 1]", ErrBadInput, r.TaskID, *r.EMA)
		}
		v.idx = append(v.idx, i)
		return nil
	}
	sorted := true
	for i := range pool {
		if i > 0 && pool[i-1].TaskID >= pool[i].TaskID {
			sorted = false
			break
		}
		if err := add(int32(i)); err != nil {
			return nil, err
		}
	}
	if !sorted {
		order := make([]int32, len(pool))
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int { return strings.Compare(pool[a].TaskID, pool[b].TaskID) })
		v.idx = v.idx[:0]
		for k, i := range order {
			if k > 0 && pool[order[k-1]].TaskID == pool[i].TaskID {
				return nil, fmt.Errorf("%w: task %q appears twice in the pool", ErrBadInput, pool[i].TaskID)
			}
			if err := add(i); err != nil {
				return nil, err
			}
		}
	}
	if v.n() == 0 {
		return nil, fmt.Errorf("%w: none of %d tasks is in the pool", ErrEmptyPool, len(pool))
	}
	if req.BatchSize > v.n() {
		return nil, fmt.Errorf("%w: batch size %d but only %d eligible tasks", ErrPoolTooSmall, req.BatchSize, v.n())
	}
	return v, nil
}

// pick is one chosen task before it becomes a batches row.
type pick struct {
	pos     int // position in the view
	channel string
	weight  float64
}

// rows turns picks into batches rows, ranked in pick order.
func (v *view) rows(picks []pick, sampler string, req Request) []schemas.Batch {
	out := make([]schemas.Batch, len(picks))
	for i, p := range picks {
		w := p.weight
		if math.IsNaN(w) || math.IsInf(w, 0) {
			w = 0 // never reached with validated rates; keeps NaN out of the lake regardless
		}
		out[i] = schemas.Batch{Iteration: req.Iteration, Rank: req.FirstRank + int32(i), TaskID: v.row(p.pos).TaskID,
			Sampler: sampler, Channel: p.channel, Weight: w}
	}
	return out
}

// uniformFrom draws k distinct positions uniformly from cand.
func uniformFrom(v *view, cand []int, k int, channel string, rngDraw func(n, k int) []int) []pick {
	out := make([]pick, 0, k)
	for _, j := range rngDraw(len(cand), k) {
		out = append(out, pick{pos: cand[j], channel: channel, weight: 1})
	}
	return out
}
