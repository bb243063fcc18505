package stage

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/cualake/cualake/schemas"
)

// How a supervised run (sft, rft) draws its items (Params.Balance). None is
// the empty string so that a default run's params read as before the
// option.
const (
	BalanceNone    = ""
	BalanceActions = "actions"
)

// CheckBalance validates Params.Balance ("none" is spelled "").
func CheckBalance(v string) error {
	switch v {
	case BalanceNone, BalanceActions:
		return nil
	}
	return fmt.Errorf("train --balance is %q, want none or actions", v)
}

// ActionWeights gives each segments row the sampling weight --balance
// actions draws it with: 1/n, where n is the number of the rows'
// trajectories whose trained tokens, read in segment order, are the same
// action sequence. Every distinct sequence then gets the same share of the
// optimiser's draws, however many tasks (demonstrated or solved) share it:
// a round that imitates ten successes of one template and two of its
// sibling's no longer spends five times the steps on the first. The
// sequence is read from the rows' own tokens (loss_mask 1), so it needs
// neither the oracle nor the simulator. groups is the number of distinct
// sequences.
func ActionWeights(rows []schemas.Segment) (weights []float64, groups int, err error) {
	byTraj := map[string][]int{}
	for i := range rows {
		r := &rows[i]
		if len(r.LossMask) != len(r.InputIDs) {
			return nil, 0, fmt.Errorf("segment %q: %d loss_mask values for %d input_ids", r.SegmentID, len(r.LossMask), len(r.InputIDs))
		}
		byTraj[r.TrajectoryID] = append(byTraj[r.TrajectoryID], i)
	}
	key := map[string]string{} // trajectory -> its action sequence's tokens, as bytes
	for id, idx := range byTraj {
		sort.Slice(idx, func(a, b int) bool { return rows[idx[a]].Index < rows[idx[b]].Index })
		var b []byte
		for _, i := range idx {
			for k, m := range rows[i].LossMask {
				if m == 1 {
					b = binary.LittleEndian.AppendUint32(b, uint32(rows[i].InputIDs[k]))
				}
			}
		}
		key[id] = string(b)
	}
	size := map[string]int{}
	for _, k := range key {
		size[k]++
	}
	weights = make([]float64, len(rows))
	for i := range rows {
		weights[i] = 1 / float64(size[key[rows[i].TrajectoryID]])
	}
	return weights, len(size), nil
}

// itemDrawer yields the item indices a supervised run's mini-batches take:
// without weights, seeded permutations one after another (each item once
// per pass); with weights, independent draws with probability proportional
// to the weight.
type itemDrawer struct {
	rng        *rand.Rand
	n          int
	order      []int
	pos        int
	cumulative []float64 // nil: unweighted
}

func newItemDrawer(rng *rand.Rand, n int, weights []float64) *itemDrawer {
	d := &itemDrawer{rng: rng, n: n}
	if weights == nil {
		d.order = rng.Perm(n)
		return d
	}
	d.cumulative = make([]float64, len(weights))
	var s float64
	for i, w := range weights {
		s += w
		d.cumulative[i] = s
	}
	return d
}

func (d *itemDrawer) next() int {
	if d.cumulative == nil {
		if d.pos == len(d.order) {
			d.order, d.pos = d.rng.Perm(d.n), 0
		}
		d.pos++
		return d.order[d.pos-1]
	}
	u := d.rng.Float64() * d.cumulative[len(d.cumulative)-1]
	i, _ := slices.BinarySearch(d.cumulative, u)
	if i < len(d.cumulative) && d.cumulative[i] == u {
		i++ // u equals a boundary: the next item's interval starts there
	}
	return min(i, len(d.cumulative)-1)
}
