package sample

import (
	"fmt"
	"sync"
	"testing"

	"github.com/cualake/cualake/schemas"
)

var (
	bigOnce sync.Once
	bigPool []schemas.PassRate
)

func pool1M() []schemas.PassRate {
	bigOnce.Do(func() {
		bigPool = synthPool(1_000_000, 0.01, 1)
		for i := range bigPool {
			if i%40 == 0 {
				bigPool[i].Feasible = false
			}
		}
	})
	return bigPool
}

func benchSelect(b *testing.B, s Sampler) {
	pool := pool1M()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Select(pool, Request{Iteration: int32(i), BatchSize: 32, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// One selection of B = 32 from a 1,000,000-task pool.
func BenchmarkFrontierSelect1M(b *testing.B) { benchSelect(b, NewFrontier()) }

// One DTAC selection of B = 32 from a 1,000,000-task pool (VAS over the
// whole pool, 4 AdaPR slots from a 1,000-item buffer).
func BenchmarkDTACSelect1M(b *testing.B) {
	d := NewDTAC()
	d.Params.MaxReplays = 1 << 30 // keep the buffer full across iterations
	for i := 0; i < 1000; i++ {
		id := fmt.Sprintf("task-%07d", i*997+1)
		d.Buffer.items[id] = &ReplayItem{TaskID: id, GroupID: id + "/g"}
	}
	benchSelect(b, d)
}

// Uniform selection, for scale.
func BenchmarkUniformSelect1M(b *testing.B) { benchSelect(b, Uniform{}) }

// The EMA update of 1,000,000 tasks with 8 rollouts each.
func BenchmarkUpdateEMA1Mx8(b *testing.B) {
	pool := pool1M()
	trs := make([]schemas.Trajectory, 0, 8*len(pool))
	for i := range pool {
		g := pool[i].TaskID + "/g"
		for j := 0; j < 8; j++ {
			r, o := 0.0, schemas.OutcomeFailure
			if (i+j)%3 == 0 {
				r, o = 1, schemas.OutcomeSuccess
			}
			trs = append(trs, schemas.Trajectory{TrajectoryID: g, TaskID: pool[i].TaskID, GroupID: g, Iteration: 1, Reward: r, Outcome: o})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := UpdateEMA(pool, trs, 1, DefaultEMA()); err != nil {
			b.Fatal(err)
		}
	}
}

// One iteration's EMA update as the stage runs it: a 1,000,000-task pool,
// B = 32 tasks with n = 8 rollouts each.
func BenchmarkUpdateEMA1MPoolOneBatch(b *testing.B) {
	pool := pool1M()
	var trs []schemas.Trajectory
	for k := 0; k < 32; k++ {
		id := pool[k*31_247].TaskID
		for j := 0; j < 8; j++ {
			trs = append(trs, schemas.Trajectory{TrajectoryID: fmt.Sprintf("%s/%d", id, j), TaskID: id, GroupID: id, Iteration: 1, Reward: float64(j % 2), Outcome: schemas.OutcomeSuccess})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := UpdateEMA(pool, trs, 1, DefaultEMA()); err != nil {
			b.Fatal(err)
		}
	}
}
