package synthesize

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/simdesk"
)

// BenchmarkSynthesizeBuiltin measures the builtin loop: accepted tasks per
// second, end-to-end latency per accepted task (wall time of a run over its
// accepted tasks), and each role's share of the time spent in roles.
func BenchmarkSynthesizeBuiltin(b *testing.B) {
	simdesk.Pool() // built once, outside the timings
	for _, workers := range []int{1, runtime.NumCPU()} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			var accepted int
			var wall time.Duration
			roles := map[string]float64{}
			total := 0.0
			for i := 0; i < b.N; i++ {
				p := DefaultParams()
				p.Count, p.Workers, p.Seed = 50, workers, int64(i)
				start := time.Now()
				res, err := Run(context.Background(), Input{}, p)
				if err != nil {
					b.Fatal(err)
				}
				wall += time.Since(start)
				accepted += res.Summary.Accepted
				for r, s := range res.Summary.RoleSeconds {
					roles[r] += s
					total += s
				}
			}
			b.ReportMetric(float64(accepted)/wall.Seconds(), "accepted/s")
			b.ReportMetric(wall.Seconds()*1000/float64(accepted), "ms/accepted")
			for _, r := range []string{RoleProposer, RoleRules, RoleJudger, RoleChecker, RoleFixer, "referee"} {
				if total > 0 {
					b.ReportMetric(100*roles[r]/total, "%"+r)
				}
			}
		})
	}
}
