package progress

import "time"

// PriorWeight is how many seconds of expected work the weights' own scale
// counts for against what the run has measured: before a minute of weight
// has run, the weights (seconds measured on the reference machine) mostly
// stand; after, the measured pace takes over.
const PriorWeight = 60.0

// Estimate is the time left of a run of steps with expected durations.
// Weights are seconds each step took on the reference machine; the
// estimate from step i on is the remaining weight times the pace so far,
// (measured seconds + PriorWeight) / (weight run + PriorWeight), so it is
// the weights themselves at the first step and follows a slower or faster
// machine as steps finish. It is not safe for concurrent use.
type Estimate struct {
	weights []float64
	spent   float64 // seconds measured for the steps run here
	spentW  float64 // their weight
	done    []bool
}

// NewEstimate returns an estimate over steps of the given weights.
func NewEstimate(weights []float64) *Estimate {
	return &Estimate{weights: weights, done: make([]bool, len(weights))}
}

// Pace is measured seconds per second of weight, 1 before any step ran.
func (e *Estimate) Pace() float64 {
	return (e.spent + PriorWeight) / (e.spentW + PriorWeight)
}

// Done records that step i took d.
func (e *Estimate) Done(i int, d time.Duration) {
	e.done[i] = true
	e.spent += d.Seconds()
	e.spentW += e.weights[i]
}

// Skip records that step i was done before (a resumed run): it counts as
// done without telling anything about the pace.
func (e *Estimate) Skip(i int) { e.done[i] = true }

// Left is the time the steps not done yet will take.
func (e *Estimate) Left() time.Duration {
	w := 0.0
	for i, x := range e.weights {
		if !e.done[i] {
			w += x
		}
	}
	return time.Duration(w * e.Pace() * float64(time.Second))
}
