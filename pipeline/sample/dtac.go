package sample

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// DTACParams are DTAC's constants (EvoCUA-1.5 section 4.2, table 8).
type DTACParams struct {
	// PLow and PHigh bound AdaPR's hard-but-learnable interval (0.125,
	// 0.375).
	PLow, PHigh float64
	// MaxReplays caps how often one buffered group is replayed (3).
	MaxReplays int32
	// AdaPRRatio is the share of the batch reserved for replays,
	// floor(AdaPRRatio * B) slots. The paper says only "an additional
	// fraction"; 0.125 (4 of 32) is our choice.
	AdaPRRatio float64
	// ICSRatio is rho_inf: ICS takes floor(ICSRatio * B) infeasible tasks
	// (0.025; note that floor(0.025 * 32) = 0).
	ICSRatio float64
	// UnratedWeight is the VAS weight of a task never tried. 4P(1-P) needs
	// a rate; 1, the weight of P = 0.5 (the most uncertain task), is ours.
	UnratedWeight float64
	// MaxStale is the staleness window of buffered groups (EvoCUA-1.5 5.2:
	// 3): a group rolled out by policy version v leaves the buffer once the
	// current version exceeds v + MaxStale.
	MaxStale int32
}

// DefaultDTAC returns EvoCUA-1.5's table 8 values plus our AdaPR ratio and
// unrated weight. The EMA (beta = 0.7) is EvoCUAEMA, applied by UpdateEMA.
func DefaultDTAC() DTACParams {
	return DTACParams{PLow: 0.125, PHigh: 0.375, MaxReplays: 3, AdaPRRatio: 0.125, ICSRatio: 0.025, UnratedWeight: 1, MaxStale: 3}
}

// Validate checks the parameters' domains; the error names the field (and
// the sample flag that sets it) and its range.
func (p DTACParams) Validate() error {
	unit := func(v float64) bool { return v >= 0 && v <= 1 }
	switch {
	case !(unit(p.PLow) && unit(p.PHigh) && p.PLow <= p.PHigh):
		return fmt.Errorf("%w: dtac PLow %v and PHigh %v, want 0 <= PLow <= PHigh <= 1", ErrBadParams, p.PLow, p.PHigh)
	case p.MaxReplays < 1:
		return fmt.Errorf("%w: dtac MaxReplays (--replay-cap) is %d, want >= 1", ErrBadParams, p.MaxReplays)
	case !unit(p.AdaPRRatio):
		return fmt.Errorf("%w: dtac AdaPRRatio (--adapr-ratio) is %v, want [0, 1]", ErrBadParams, p.AdaPRRatio)
	case !unit(p.ICSRatio):
		return fmt.Errorf("%w: dtac ICSRatio (--ics-ratio) is %v, want [0, 1]", ErrBadParams, p.ICSRatio)
	case p.AdaPRRatio+p.ICSRatio > 1:
		return fmt.Errorf("%w: dtac AdaPRRatio (--adapr-ratio) %v + ICSRatio (--ics-ratio) %v is over 1", ErrBadParams, p.AdaPRRatio, p.ICSRatio)
	case !unit(p.UnratedWeight):
		return fmt.Errorf("%w: dtac UnratedWeight is %v, want [0, 1]", ErrBadParams, p.UnratedWeight)
	case p.MaxStale < 0:
		return fmt.Errorf("%w: dtac MaxStale (--max-stale) is %d, want >= 0", ErrBadParams, p.MaxStale)
	}
	return nil
}

// VASWeight is EvoCUA-1.5 eq. 18: 4P(1-P).
func VASWeight(p float64) float64 { return 4 * p * (1 - p) }

// ReplayItem is one buffered rollout group of AdaPR.
type ReplayItem struct {
	TaskID    string
	GroupID   string
	Iteration int32 // the iteration whose rollouts produced the group
	Replays   int32 // how often it was replayed so far
	// PolicyVersion, Trajectories and Successes describe the stored group
	// (the trainer reads its trajectories and segments back).
	PolicyVersion int32
	Trajectories  []string
	Successes     int32
}

// ReplayBuffer is AdaPR's buffer: at most one live group per task (a newer
// qualifying group replaces the older, fresher data being nearer on-policy),
// each replayed at most MaxReplays times.
//
// The sample stage stores it after every selection as replay_buffer rows
// (BufferRows) and reads it back from them (BufferFromRows), so a rebuilt
// lake or a resumed run sees the same buffer.
type ReplayBuffer struct {
	items map[string]*ReplayItem
}

// NewReplayBuffer returns an empty buffer.
func NewReplayBuffer() *ReplayBuffer { return &ReplayBuffer{items: map[string]*ReplayItem{}} }

// Items returns the live items sorted by task id.
func (b *ReplayBuffer) Items() []ReplayItem {
	out := make([]ReplayItem, 0, len(b.items))
	for _, it := range b.items {
		out = append(out, *it)
	}
	slices.SortFunc(out, func(x, y ReplayItem) int { return strings.Compare(x.TaskID, y.TaskID) })
	return out
}

// Lookup returns the live item of a task.
func (b *ReplayBuffer) Lookup(taskID string) (ReplayItem, bool) {
	it, ok := b.items[taskID]
	if !ok {
		return ReplayItem{}, false
	}
	return *it, true
}

// Observe adds the qualifying groups of one iteration. groups are that
// iteration's rollout groups (GroupOutcomes); rows are the pass-rate rows of
// the same iteration, after UpdateEMA folded those rollouts in. A group
// qualifies when it has at least one success ("successful or partially
// successful") and its task is feasible with an EMA in [PLow, PHigh]. Among
// several qualifying groups of one task, the one with most successes wins,
// then the smaller group id.
func (b *ReplayBuffer) Observe(groups []GroupOutcome, rows []schemas.PassRate, p DTACParams) error {
	_, err := b.observe(groups, rows, p)
	return err
}

// observe is Observe that also returns the items the new groups replaced,
// sorted by task id.
func (b *ReplayBuffer) observe(groups []GroupOutcome, rows []schemas.PassRate, p DTACParams) ([]ReplayItem, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	rate := make(map[string]*schemas.PassRate, len(groups))
	for _, g := range groups {
		rate[g.TaskID] = nil
	}
	for i := range rows {
		if _, want := rate[rows[i].TaskID]; want {
			rate[rows[i].TaskID] = &rows[i]
		}
	}
	best := map[string]GroupOutcome{}
	for _, g := range groups {
		r := rate[g.TaskID]
		if r == nil {
			return nil, fmt.Errorf("%w: group %q: task %q has no pass-rate row", ErrBadInput, g.GroupID, g.TaskID)
		}
		if r.Iteration != g.Iteration {
			return nil, fmt.Errorf("%w: group %q is from iteration %d but task %q's pass-rate row is from %d", ErrBadInput, g.GroupID, g.Iteration, g.TaskID, r.Iteration)
		}
		if g.Successes < 1 || !r.Feasible || r.EMA == nil || *r.EMA < p.PLow || *r.EMA > p.PHigh {
			continue
		}
		if old, ok := best[g.TaskID]; ok && (old.Successes > g.Successes || (old.Successes == g.Successes && old.GroupID < g.GroupID)) {
			continue
		}
		best[g.TaskID] = g
	}
	var replaced []ReplayItem
	for task, g := range best {
		if old, ok := b.items[task]; ok {
			replaced = append(replaced, *old)
		}
		b.items[task] = &ReplayItem{TaskID: task, GroupID: g.GroupID, Iteration: g.Iteration, PolicyVersion: g.PolicyVersion,
			Trajectories: g.Trajectories, Successes: g.Successes}
	}
	slices.SortFunc(replaced, func(x, y ReplayItem) int { return strings.Compare(x.TaskID, y.TaskID) })
	return replaced, nil
}

// consume counts one replay of a task's item and drops it at the cap.
func (b *ReplayBuffer) consume(taskID string, maxReplays int32) (ReplayItem, error) {
	it, ok := b.items[taskID]
	if !ok {
		return ReplayItem{}, fmt.Errorf("%w: replay of task %q but the buffer holds no group for it", ErrBadInput, taskID)
	}
	it.Replays++
	if it.Replays >= maxReplays {
		delete(b.items, taskID)
	}
	return *it, nil
}

// DTAC is EvoCUA-1.5's Dynamic Tri-Adaptive Curriculum. A batch of B
// distinct tasks is the union of three channels:
//
//   - ICS: floor(ICSRatio B) tasks drawn uniformly from the eligible
//     infeasible tasks (all of them when fewer);
//   - AdaPR: up to floor(AdaPRRatio B) live buffer items whose task is
//     eligible and feasible, drawn uniformly; each pick replays the buffered
//     group (the rollout stage does not roll these tasks out again; the
//     trainer reuses the group, found with Buffer.Lookup before the
//     selection or in Replayed after it) and counts towards its cap;
//   - VAS: the rest, drawn from the other eligible feasible tasks without
//     replacement, each successive draw proportional to 4P(1-P) on the EMA
//     (UnratedWeight for tasks never tried; zero-weight tasks only when the
//     positive ones run out).
//
// Shortfalls move to VAS, and when the feasible tasks run out, to ICS, so
// a batch always has B tasks. Rows: VAS picks, then AdaPR, then ICS.
type DTAC struct {
	Params DTACParams
	// Buffer is AdaPR's state; Select consumes replays from it, and the
	// caller adds each iteration's groups with Buffer.Observe.
	Buffer *ReplayBuffer
	// Replayed lists the items the last Select consumed, in rank order, with
	// the replay count after that selection.
	Replayed []ReplayItem
}

// NewDTAC returns a DTAC sampler with the paper's defaults and an empty
// buffer.
func NewDTAC() *DTAC { return &DTAC{Params: DefaultDTAC(), Buffer: NewReplayBuffer()} }

// Name implements Sampler.
func (d *DTAC) Name() string { return NameDTAC }

// Weight implements Sampler: the VAS weight of a feasible task, none for an
// infeasible one (ICS draws those uniformly).
func (d *DTAC) Weight(r *schemas.PassRate) (float64, bool) {
	if !r.Feasible {
		return 0, false
	}
	if r.EMA == nil {
		return d.Params.UnratedWeight, true
	}
	return VASWeight(*r.EMA), true
}

// DTACSplit returns the nominal channel sizes for B: ICS floor(rho B), AdaPR
// floor(ratio B), VAS the rest.
func DTACSplit(b int, p DTACParams) (vas, adapr, ics int) {
	ics = floorCount(p.ICSRatio * float64(b))
	adapr = floorCount(p.AdaPRRatio * float64(b))
	return b - ics - adapr, adapr, ics
}

// Select implements Sampler.
func (d *DTAC) Select(pool []schemas.PassRate, req Request) ([]schemas.Batch, error) {
	if err := d.Params.Validate(); err != nil {
		return nil, err
	}
	if d.Buffer == nil {
		d.Buffer = NewReplayBuffer()
	}
	v, err := newView(pool, req)
	if err != nil {
		return nil, err
	}
	b := req.BatchSize
	rng := newRNG(req.Seed, NameDTAC, req.Iteration, req.Round)

	var infeasible []int
	feasible := 0
	for i := 0; i < v.n(); i++ {
		if v.row(i).Feasible {
			feasible++
		} else {
			infeasible = append(infeasible, i)
		}
	}
	// Replayable items: buffered tasks that are eligible and feasible, found
	// by binary search in the id-sorted view (the buffer is small).
	var live []string
	pos := make(map[string]int, len(d.Buffer.items))
	for t := range d.Buffer.items {
		j, ok := sort.Find(v.n(), func(i int) int { return strings.Compare(t, v.row(i).TaskID) })
		if ok && v.row(j).Feasible {
			live = append(live, t)
			pos[t] = j
		}
	}
	slices.Sort(live) // a stable draw whatever the map order

	nV, nA, nI := DTACSplit(b, d.Params)
	if nI > len(infeasible) {
		nV += nI - len(infeasible)
		nI = len(infeasible)
	}
	if nA > len(live) {
		nV += nA - len(live)
		nA = len(live)
	}
	if short := nV - (feasible - nA); short > 0 { // feasible tasks run out: ICS takes the rest
		nV -= short
		nI += short
	}

	chosen := make([]bool, v.n())
	var ics, adapr, vas []pick
	for _, j := range uniformSample(rng, len(infeasible), nI) {
		ics = append(ics, pick{pos: infeasible[j], channel: ChannelICS, weight: 1})
		chosen[infeasible[j]] = true
	}
	replayTasks := make([]string, 0, nA)
	for _, j := range uniformSample(rng, len(live), nA) {
		p := pos[live[j]]
		adapr = append(adapr, pick{pos: p, channel: ChannelAdaPR, weight: 1})
		chosen[p] = true
		replayTasks = append(replayTasks, live[j])
	}
	weight := func(i int) float64 {
		r := v.row(i)
		if !r.Feasible || chosen[i] {
			return 0
		}
		if r.EMA == nil {
			return d.Params.UnratedWeight
		}
		return VASWeight(*r.EMA)
	}
	if nV > 0 {
		cand := weightedSample(rng, v.n(), nV, weight)
		if len(cand) < nV {
			// Too few positive weights (every rate 0 or 1): fill uniformly
			// from the remaining feasible tasks.
			taken := make(map[int]bool, len(cand))
			for _, p := range cand {
				taken[p] = true
			}
			var rest []int
			for i := 0; i < v.n(); i++ {
				if v.row(i).Feasible && !chosen[i] && !taken[i] {
					rest = append(rest, i)
				}
			}
			for _, j := range uniformSample(rng, len(rest), nV-len(cand)) {
				cand = append(cand, rest[j])
			}
		}
		for _, p := range cand {
			vas = append(vas, pick{pos: p, channel: ChannelVAS, weight: weight(p)})
			chosen[p] = true
		}
	}
	// Commit the replays only once the selection cannot fail.
	d.Replayed = nil
	for _, t := range replayTasks {
		it, err := d.Buffer.consume(t, d.Params.MaxReplays)
		if err != nil {
			return nil, err
		}
		d.Replayed = append(d.Replayed, it)
	}
	picks := append(append(vas, adapr...), ics...)
	return v.rows(picks, NameDTAC, req), nil
}
