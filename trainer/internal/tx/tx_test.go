package tx

import (
	"runtime"
	"sync"
	"testing"

	"github.com/sugarme/gotch"
)

// TestScalarsOutliveTheirOps: gotch frees a Scalar in its finalizer, and
// the GC may run that as soon as an op has read the scalar's C pointer,
// while libtorch still reads it (scripts/setup-gotch.sh, fix f, keeps every
// scalar argument alive through the call). Scalar ops on two goroutines,
// with the GC running all the time, must all succeed with the right values
// (without the fix a warm start failed with "s.isIntegral(false) INTERNAL
// ASSERT FAILED"). The race is narrow: without
// the fix this test failed in about half the runs, never with it.
func TestScalarsOutliveTheirOps(t *testing.T) {
	stop := make(chan struct{})
	var gc sync.WaitGroup
	gc.Add(1)
	go func() {
		defer gc.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer Lock()()
			for i := range 3000 {
				s := NewScope()
				x := s.Ones([]int64{1 << 20}, gotch.CPU)
				y := s.ClampMax(s.AddScalar(s.MulScalar(x, float64(i)), 0.5), 1e9)
				y = s.Clamp(s.ClampMin(y, -1e9), -1e9, 1e9)
				if err := s.Err(); err != nil {
					errs[w] = err
					s.Close()
					return
				}
				v, err := ReadFloat32(y)
				s.Close()
				if err != nil || v[3] != float32(i)+0.5 {
					errs[w] = err
					if err == nil {
						t.Errorf("worker %d op %d: %v, want %v", w, i, v[3], float32(i)+0.5)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	gc.Wait()
	for w, err := range errs {
		if err != nil {
			t.Errorf("worker %d: %v", w, err)
		}
	}
}
