package progress

import (
	"testing"
	"time"
)

func TestEstimateStartsFromTheWeightsAndFollowsThePace(t *testing.T) {
	e := NewEstimate([]float64{10, 300, 50})
	if got := e.Left(); got != 360*time.Second {
		t.Fatalf("before any step: %v, want the weights' 6m0s", got)
	}
	// A machine twice as slow: 20 s for the first step. With the prior of
	// 60 weight-seconds the pace is (20+60)/(10+60).
	e.Done(0, 20*time.Second)
	if got, want := e.Pace(), 80.0/70; got != want {
		t.Fatalf("pace %v, want %v", got, want)
	}
	if got, want := e.Left().Seconds(), 350*80.0/70; got < want-1e-6 || got > want+1e-6 {
		t.Fatalf("left %v, want %v", got, want)
	}
	// After the long step the measured pace dominates.
	e.Done(1, 600*time.Second)
	if got, want := e.Left().Seconds(), 50*680.0/370; got < want-1e-6 || got > want+1e-6 {
		t.Fatalf("left %v, want %v", got, want)
	}
	e.Done(2, 100*time.Second)
	if e.Left() != 0 {
		t.Fatalf("all done: %v left", e.Left())
	}
}

func TestSkippedStepsTellNothingAboutThePace(t *testing.T) {
	e := NewEstimate([]float64{100, 100})
	e.Skip(0)
	if e.Pace() != 1 || e.Left() != 100*time.Second {
		t.Fatalf("pace %v, left %v", e.Pace(), e.Left())
	}
}
