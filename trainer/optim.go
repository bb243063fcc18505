package trainer

import (
	"errors"
	"fmt"
	"math"

	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer/internal/tx"
)

// DefaultMaxGradNorm clips the global gradient L2 norm.
const DefaultMaxGradNorm = 1.0

// Optimizer is Adam (beta 0.9/0.999, eps 1e-8, no weight decay; libtorch's
// implementation) over one model's weights. Its moment estimates live in
// libtorch and are not part of the checkpoint.
type Optimizer struct {
	opt    *ts.COptimizer
	params []*ts.Tensor
	lr     float64
	steps  int
}

// NewOptimizerOver creates Adam with learning rate lr over the given
// weights, in their order (a model's Parameters).
func NewOptimizerOver(params []*ts.Tensor, lr float64) (o *Optimizer, err error) {
	if len(params) == 0 {
		return nil, errors.New("new optimizer: no weights")
	}
	if !(lr > 0) || math.IsInf(lr, 0) {
		return nil, fmt.Errorf("new optimizer: learning rate %v must be positive", lr)
	}
	defer tx.Lock()()
	defer tx.Recover(&err, "new optimizer")
	opt, err := ts.Adam(lr, 0.9, 0.999, 0)
	if err != nil {
		return nil, fmt.Errorf("new optimizer: %w", err)
	}
	for i, p := range params {
		if err := opt.AddParameter(p, 0); err != nil {
			return nil, fmt.Errorf("new optimizer: add parameter %d: %w", i, err)
		}
	}
	return &Optimizer{opt: opt, params: params, lr: lr}, nil
}

// ZeroGrad clears the weights' gradients, before backward passes that
// accumulate into them (see Apply).
func (o *Optimizer) ZeroGrad() (err error) {
	if o.opt == nil {
		return errors.New("optimizer is closed")
	}
	defer tx.Lock()()
	defer tx.Recover(&err, "zero grad")
	if err := o.opt.ZeroGrad(); err != nil {
		return fmt.Errorf("zero grad: %w", err)
	}
	return nil
}

// Apply clips the accumulated gradients to the global L2 norm maxNorm (0
// disables clipping) and applies one Adam step; it returns the norm before
// clipping. A non-finite norm skips the step and is an error.
func (o *Optimizer) Apply(maxNorm float64) (norm float64, err error) {
	if o.opt == nil {
		return 0, errors.New("optimizer is closed")
	}
	defer tx.Lock()()
	defer tx.Recover(&err, "optimizer step")
	if norm, err = o.clip(maxNorm); err != nil {
		return 0, err
	}
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, fmt.Errorf("non-finite gradient norm %v; update skipped", norm)
	}
	if err := o.opt.Step(); err != nil {
		return 0, fmt.Errorf("adam step: %w", err)
	}
	o.steps++
	return norm, nil
}

// LR returns the learning rate.
func (o *Optimizer) LR() float64 { return o.lr }

// Steps returns the number of updates applied.
func (o *Optimizer) Steps() int { return o.steps }

// SetLR changes the learning rate (for schedules).
func (o *Optimizer) SetLR(lr float64) error {
	if !(lr > 0) || math.IsInf(lr, 0) {
		return fmt.Errorf("set learning rate: %v must be positive", lr)
	}
	defer tx.Lock()()
	if err := o.opt.SetLearningRate(lr); err != nil {
		return fmt.Errorf("set learning rate: %w", err)
	}
	o.lr = lr
	return nil
}

// Close frees the optimizer's state.
func (o *Optimizer) Close() {
	if o.opt != nil {
		defer tx.Lock()()
		o.opt.Drop()
		o.opt = nil
	}
}

// clip scales all gradients by min(1, maxNorm/(norm+1e-6)), summing the
// per-weight norms in the fixed parameter order so the result is
// reproducible (gotch's ClipGradNorm iterates a map).
func (o *Optimizer) clip(maxNorm float64) (float64, error) {
	s := tx.NewScope()
	defer s.Close()
	var grads []*ts.Tensor
	total := 0.0
	err := tx.NoGrad(func() error {
		for i, p := range o.params {
			t, err := p.Grad(false)
			g := s.Track("grad", t, err)
			if s.Err() != nil {
				return s.Err()
			}
			def, err := g.Defined()
			if err != nil {
				return fmt.Errorf("grad %d: %w", i, err)
			}
			if !def {
				continue // weight unused by this batch (e.g. vision without images)
			}
			sq, err := tx.Scalar(s.Sum(s.Square(g)))
			if err != nil {
				return fmt.Errorf("grad %d norm: %w", i, err)
			}
			total += sq
			grads = append(grads, g)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("clip gradients: %w", err)
	}
	norm := math.Sqrt(total)
	if maxNorm <= 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, nil
	}
	if coef := maxNorm / (norm + 1e-6); coef < 1 {
		for i, g := range grads {
			if err := g.MulScalar_(ts.FloatScalar(coef)); err != nil {
				return 0, fmt.Errorf("clip gradients: scale grad %d: %w", i, err)
			}
		}
	}
	return norm, nil
}
