package simdesk

import (
	"testing"
)

// stepsPerOp is how many steps one benchmark op plays: make bench runs
// every benchmark with -benchtime 1x, and one step (with the episode's
// Reset) is too short to time.
const stepsPerOp = 300

// benchSteps plays random episodes over the pool, stepsPerOp steps per op,
// and reports steps/s.
func benchSteps(b *testing.B, treeOnly bool) {
	pool := Pool()
	sim, err := NewSim(Options{TreeOnly: treeOnly})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	steps, k := 0, 0
	var pol Policy
	obs := Obs{Done: true}
	for i := 0; i < b.N*stepsPerOp; i++ {
		if obs.Done || obs.Step >= 30 {
			task := pool[(k*37)%len(pool)]
			if obs, err = sim.Reset(task, int64(k)); err != nil {
				b.Fatal(err)
			}
			pol = RandomPolicy(int64(k))
			k++
		}
		a, err := pol.Next(obs)
		if err != nil {
			b.Fatal(err)
		}
		if obs, err = sim.Step(a); err != nil {
			b.Fatal(err)
		}
		steps++
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		// Robust to other load on the machine: CPU spent per step.
		b.ReportMetric(float64(cpu.Microseconds())/float64(steps), "cpu-µs/step")
	}
}

// BenchmarkStepScreenshot: one action, then the 1280x800 screenshot
// rendered and PNG-encoded plus the accessibility tree.
func BenchmarkStepScreenshot(b *testing.B) { benchSteps(b, false) }

// BenchmarkStepTreeOnly: one action and the accessibility tree, no pixels.
func BenchmarkStepTreeOnly(b *testing.B) { benchSteps(b, true) }

// BenchmarkScreenshotParallel renders on every core with one simulator per
// goroutine, the way a rollout worker pool would.
func BenchmarkScreenshotParallel(b *testing.B) {
	pool := Pool()
	b.RunParallel(func(pb *testing.PB) {
		sim, err := NewSim(Options{})
		if err != nil {
			b.Error(err)
			return
		}
		k := 0
		obs, _ := sim.Reset(pool[0], 0)
		pol := RandomPolicy(0)
		for pb.Next() {
			if obs.Done || obs.Step >= 30 {
				k++
				obs, _ = sim.Reset(pool[(k*37)%len(pool)], int64(k))
				pol = RandomPolicy(int64(k))
			}
			a, _ := pol.Next(obs)
			obs, _ = sim.Step(a)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkOracleEpisode: whole oracle episodes (tree only) per second.
func BenchmarkOracleEpisode(b *testing.B) {
	pool := Pool()
	sim, err := NewSim(Options{TreeOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		task := pool[i%len(pool)]
		pol, err := Oracle(task)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(sim, pol, task, int64(i), MaxOracleSteps); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
}

// BenchmarkRandomEpisode: whole 30-step random episodes (tree only) per
// second.
func BenchmarkRandomEpisode(b *testing.B) {
	pool := Pool()
	sim, err := NewSim(Options{TreeOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Run(sim, RandomPolicy(int64(i)), pool[(i*37)%len(pool)], int64(i), 30); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
}
