package causal

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer/internal/tx"
)

// itemWorkers is the number of training items whose forward and backward
// passes run at once on the CPU, each on its own OS thread (libtorch runs
// one thread per op, trainer/stage.Threads). The updates do not depend on
// it: every item's gradients are added to the model's in item order,
// exactly as a loop over the items adds them
// (TestParallelItemsMatchOneAtATime). At most 4: each item in flight holds
// its activations (a few hundred MB for a warm-start window).
var itemWorkers = min(runtime.GOMAXPROCS(0), 4)

// workers is how many items run at once on m's device: one on a GPU,
// whose kernels already run the item in parallel and whose memory is the
// limit.
func (m *Model) workers() int {
	if m.dev != gotch.CPU {
		return 1
	}
	return itemWorkers
}

// itemGrads is what one item's pass leaves: its gradient of each weight,
// in the model's weight order (nil where the item did not reach the
// weight), and the values the step reports.
type itemGrads struct {
	grads []*ts.Tensor
	loss  float64
	hits  int
	grpo  itemResult
}

func (r itemGrads) drop() {
	for _, g := range r.grads {
		if g != nil {
			_ = g.Drop()
		}
	}
}

// onLeaves runs pass on a view of m whose weights are leaves of their own
// (the same storage, no copy) and returns the gradients pass's backward
// left on them. m's own gradients are untouched, so passes of several
// items run at once; addGrads adds each to m's in item order.
func (m *Model) onLeaves(pass func(v *Model) (itemGrads, error)) (r itemGrads, err error) {
	v, err := m.leafView()
	if err != nil {
		return r, err
	}
	defer v.dropLeaves()
	if r, err = pass(v); err != nil {
		return r, err
	}
	r.grads, err = v.leafGrads()
	return r, err
}

// leafView returns a model that reads m's weights through fresh leaf
// tensors: detached views of the same storage, each requiring grad.
func (m *Model) leafView() (v *Model, err error) {
	defer tx.Lock()()
	defer tx.Recover(&err, "leaf view")
	c := *m
	v = &c
	v.params, v.byName = make([]param, 0, len(m.params)), make(map[string]*ts.Tensor, len(m.params))
	for _, p := range m.params {
		t, err := p.t.Detach(false)
		if err == nil {
			if err = t.RequiresGrad_(true); err != nil {
				_ = t.Drop()
			}
		}
		if err != nil {
			v.dropLeaves()
			return nil, fmt.Errorf("leaf view of %q: %w", p.name, err)
		}
		v.params = append(v.params, param{name: p.name, shape: p.shape, t: t})
		v.byName[p.name] = t
	}
	return v, nil
}

// dropLeaves releases a view's leaves (the storage stays with the model;
// positions and output mask are the model's and stay too).
func (m *Model) dropLeaves() {
	for _, p := range m.params {
		_ = p.t.Drop()
	}
	m.params, m.byName = nil, nil
}

// leafGrads returns the gradient on each of the view's leaves, nil where
// the backward pass did not reach it.
func (m *Model) leafGrads() (out []*ts.Tensor, err error) {
	defer tx.Lock()()
	defer tx.Recover(&err, "item gradients")
	out = make([]*ts.Tensor, len(m.params))
	for i, p := range m.params {
		g, err := p.t.Grad(false)
		var def bool
		if err == nil {
			def, err = g.Defined()
		}
		if err != nil || !def {
			if g != nil {
				_ = g.Drop()
			}
			if err != nil {
				itemGrads{grads: out}.drop()
				return nil, fmt.Errorf("gradient of %q: %w", p.name, err)
			}
			continue
		}
		out[i] = g
	}
	return out, nil
}

// addGrads adds one item's gradients to m's weights' as the item's own
// backward pass on m would have: the backward pass of sum_w sum(w * g_w)
// hands each weight exactly g_w (1 * g), and autograd stores it where the
// weight has no gradient yet and adds it where it has one. Weights the item
// did not reach keep no gradient, as they would.
func (m *Model) addGrads(g []*ts.Tensor) (err error) {
	if len(g) != len(m.params) {
		return fmt.Errorf("add gradients: %d for %d weights", len(g), len(m.params))
	}
	defer tx.Lock()()
	defer tx.Recover(&err, "add gradients")
	s := tx.NewScope()
	defer s.Close()
	var total *ts.Tensor
	for i, p := range m.params {
		if g[i] == nil {
			continue
		}
		t := s.Sum(s.Mul(p.t, g[i]))
		if total == nil {
			total = t
		} else {
			total = s.Add(total, t)
		}
	}
	if total == nil {
		return errors.New("add gradients: the item reached no weight")
	}
	s.Backward(total)
	if err := s.Err(); err != nil {
		return fmt.Errorf("add gradients: %w", err)
	}
	return nil
}

// errSkipped marks the items not started after an earlier one failed.
var errSkipped = errors.New("skipped after an earlier item failed")

// inOrder runs work(i) for i in [0, n) on up to workers goroutines and
// hands each result to use, on the caller's goroutine, in index order. At
// most workers results are computed or waiting at a time, so memory holds
// that many items' passes. use owns the result it is given; results never
// used are released with drop. The error returned is the first in index
// order; no item starts after it is seen.
func inOrder[T any](n, workers int, work func(i int) (T, error), use func(i int, r T) error, drop func(T)) error {
	if workers <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			r, err := work(i)
			if err != nil {
				return err
			}
			if err := use(i, r); err != nil {
				return err
			}
		}
		return nil
	}
	type result struct {
		v   T
		err error
	}
	out := make([]chan result, n)
	for i := range out {
		out[i] = make(chan result, 1)
	}
	slots := make(chan struct{}, workers)
	var stop atomic.Bool
	var wg sync.WaitGroup
	go func() {
		for i := 0; i < n; i++ {
			slots <- struct{}{}
			if stop.Load() {
				out[i] <- result{err: errSkipped}
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := work(i)
				out[i] <- result{v, err}
			}()
		}
	}()
	var first error
	for i := 0; i < n; i++ {
		r := <-out[i]
		switch {
		case first != nil:
			if r.err == nil {
				drop(r.v)
			}
		case r.err != nil:
			first = r.err
			stop.Store(true)
		default:
			if err := use(i, r.v); err != nil {
				first = err
				stop.Store(true)
			}
		}
		<-slots // after stop is set: no item starts after a failed one is seen
	}
	wg.Wait()
	return first
}
