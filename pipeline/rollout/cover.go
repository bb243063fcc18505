package rollout

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sort"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

// Stratum is the group Cover draws a fraction of: the task family for
// numbered tasks ("editor-fixline" for editor-fixline-002), else the app
// and source ("editor/synthesized": VeriGen's tasks are one of a kind, so
// each would otherwise be a family of one and always kept).
func Stratum(t *schemas.Task) string {
	if f := simdesk.FamilyOf(t.TaskID); f != t.TaskID {
		return f
	}
	return t.App + "/" + t.Source
}

// Cover keeps ceil(fraction x n) tasks of each stratum of n tasks, picked
// by the seed, in their input order: demonstrations that cover every
// family but only some of its instances, the regime the papers' RL starts
// from (a warm start on limited traces, RL over a larger pool). fraction 1
// keeps every task; outside (0, 1] is an error.
//
// templates (task id to template, OracleTemplates; nil: none) makes the
// pick cover a stratum's templates before it takes a second instance of
// any: walking the seed's order, a task whose template is already kept
// waits until every template has one. A task with no template is its own.
// With nil templates the pick is the seed's first ceil(fraction x n).
func Cover(tasks []schemas.Task, fraction float64, seed int64, templates map[string]string) ([]schemas.Task, error) {
	if !(fraction > 0 && fraction <= 1) { // NaN fails too
		return nil, fmt.Errorf("rollout: --coverage is %v, want a fraction in (0, 1]", fraction)
	}
	if fraction == 1 {
		return tasks, nil
	}
	byStratum := map[string][]int{}
	for i := range tasks {
		s := Stratum(&tasks[i])
		byStratum[s] = append(byStratum[s], i)
	}
	keep := make([]bool, len(tasks))
	for _, idx := range byStratum {
		// The order within a stratum is a hash of the seed and the task
		// id, so the pick depends on neither the input order nor the
		// other strata.
		key := func(i int) uint64 { return coverKey(seed, tasks[i].TaskID) }
		sort.Slice(idx, func(a, b int) bool {
			ka, kb := key(idx[a]), key(idx[b])
			if ka != kb {
				return ka < kb
			}
			return tasks[idx[a]].TaskID < tasks[idx[b]].TaskID
		})
		// less a rounding's worth, so that 0.3 x 10 keeps 3, not 4
		n := max(1, int(math.Ceil(fraction*float64(len(idx))-1e-9)))
		for _, i := range pickTemplates(tasks, idx, n, templates) {
			keep[i] = true
		}
	}
	var out []schemas.Task
	for i, t := range tasks {
		if keep[i] {
			out = append(out, t)
		}
	}
	return out, nil
}

// pickTemplates returns n of the ordered indices: first the first task of
// each template in that order, then the rest in that order.
func pickTemplates(tasks []schemas.Task, idx []int, n int, templates map[string]string) []int {
	if templates == nil {
		return idx[:n]
	}
	var first, later []int
	seen := map[string]bool{}
	for _, i := range idx {
		tmpl, ok := templates[tasks[i].TaskID]
		if ok && seen[tmpl] {
			later = append(later, i)
			continue
		}
		if ok {
			seen[tmpl] = true
		}
		first = append(first, i)
	}
	return append(first, later...)[:n]
}

func coverKey(seed int64, taskID string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	h.Write([]byte("cover/"))
	h.Write([]byte(taskID))
	return h.Sum64()
}
