package importer

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/importer/internal/fixture"
	"github.com/cualake/cualake/pipeline/lake"
)

// benchTrees caches generated results trees across benchmark rounds; they
// are removed when the test binary exits.
var (
	benchMu    sync.Mutex
	benchTrees = map[string]string{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchTrees {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// benchScreen is the screenshot size: CUALAKE_BENCH_SCREEN=1920x1080 for
// OSWorld's full size (slow to generate), 640x360 by default.
func benchScreen() (int, int) {
	w, h, ok := strings.Cut(os.Getenv("CUALAKE_BENCH_SCREEN"), "x")
	if ok {
		wi, err1 := strconv.Atoi(w)
		hi, err2 := strconv.Atoi(h)
		if err1 == nil && err2 == nil && wi > 0 && hi > 0 {
			return wi, hi
		}
	}
	return 640, 360
}

func benchTree(b *testing.B, episodes, steps int) string {
	b.Helper()
	w, h := benchScreen()
	key := fmt.Sprintf("%d-%d-%dx%d", episodes, steps, w, h)
	benchMu.Lock()
	defer benchMu.Unlock()
	if d, ok := benchTrees[key]; ok {
		return d
	}
	dir, err := os.MkdirTemp("", "cualake-bench-")
	if err != nil {
		b.Fatal(err)
	}
	eps := fixture.Synthetic(episodes, steps, w, h)
	var wg sync.WaitGroup
	var failed atomic.Value
	next := atomic.Int64{}
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(eps); i = int(next.Add(1)) - 1 {
				if err := eps[i].Write(dir); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	benchTrees[key] = dir
	return dir
}

// BenchmarkImportOSWorldResults imports synthetic OSWorld runs (30 steps per
// episode, a distinct PNG per step except every fifth) into a fresh lake and
// reports episodes/s and peak memory. The import streams episode by
// episode; its tables go through lake.SortedWriter (so that sharded and
// unsharded imports write the same files), which buffers BlobChunkRows
// blobs before spilling a sorted run and, when merging the runs, reads 16
// blobs from each: peak heap grows with the square root of the number of
// blobs (about 220 MB at 250 episodes, 480 MB at 1000, at 640x360).
func BenchmarkImportOSWorldResults(b *testing.B) {
	for _, n := range []int{250, 1000} {
		b.Run(fmt.Sprintf("episodes=%d", n), func(b *testing.B) {
			tree := benchTree(b, n, 30)
			b.ResetTimer()
			var peakHeap atomic.Uint64
			var sys uint64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := b.TempDir()
				l, err := lake.OpenDir(context.Background(), dir, true)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				stop := make(chan struct{})
				sampled := make(chan struct{})
				go func() { // sample the heap while the import runs
					defer close(sampled)
					var ms runtime.MemStats
					t := time.NewTicker(20 * time.Millisecond)
					defer t.Stop()
					for {
						runtime.ReadMemStats(&ms)
						for cur := peakHeap.Load(); ms.HeapInuse > cur && !peakHeap.CompareAndSwap(cur, ms.HeapInuse); cur = peakHeap.Load() {
						}
						select {
						case <-stop:
							return
						case <-t.C:
						}
					}
				}()
				b.StartTimer()
				rep, err := Run(context.Background(), l, Options{Kind: KindOSWorldResults, Paths: []string{tree}})
				b.StopTimer()
				close(stop)
				<-sampled
				if err != nil {
					b.Fatal(err)
				}
				if rep.Trajectories.Added != n || rep.Steps != n*30 {
					b.Fatalf("%+v", rep)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				sys = ms.Sys
				os.RemoveAll(dir)
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
			b.ReportMetric(float64(peakHeap.Load())/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(sys)/(1<<20), "sys-MB")
		})
	}
}
