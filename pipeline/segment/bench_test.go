package segment

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/segment/internal/synth"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/schemas"
)

// The benchmark workload of the issue: 2,000 trajectories of 30 turns,
// every screenshot 1280x800 = 1,000 pad tokens (Qwen3-VL).
const (
	benchTrajs  = 2000
	benchTurns  = 30
	benchWidth  = 1280
	benchHeight = 800
)

var benchModes = []Params{
	{Mode: ModeTrajectory},
	{Mode: ModeStep, Window: DefaultWindow},
	{Mode: ModeWindow, K: DefaultK, Delta: DefaultDelta},
}

// peakHeap samples the live heap every few milliseconds until stopped.
type peakHeap struct {
	stop chan struct{}
	done chan struct{}
	peak uint64
}

func watchHeap() *peakHeap {
	runtime.GC()
	p := &peakHeap{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			p.peak = max(p.peak, s[0].Value.Uint64())
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// MB stops sampling and returns the peak in MiB.
func (p *peakHeap) MB() float64 {
	close(p.stop)
	<-p.done
	return float64(p.peak) / (1 << 20)
}

var benchCore struct {
	once sync.Once
	c    *Codec
	ids  []string
	ps   []*Prepared
}

// BenchmarkSegmentCore times the mode algorithms alone, on one goroutine, on pre-tokenized
// trajectories (every piece already tokenized, as in bench/segment_alg2.py's
// input; set CUALAKE_ALG2_JSONL=FILE to write that input).
func BenchmarkSegmentCore(b *testing.B) {
	enc := qwen(b)
	benchCore.once.Do(func() {
		d := synth.Generate(enc, synth.Options{Seed: 1, Trajectories: benchTrajs, Turns: benchTurns, Screenshots: 1, Width: benchWidth, Height: benchHeight})
		benchCore.c, benchCore.ids, benchCore.ps = prepareData(b, enc, d, benchWidth, benchHeight)
		for _, p := range benchCore.ps {
			g := segmenter{p: p}
			for i := range p.Turns {
				g.ensure(i)
			}
		}
		if path := os.Getenv("CUALAKE_ALG2_JSONL"); path != "" {
			f, err := os.Create(path)
			must(b, err)
			pw, err := NewPretokWriter(f, benchCore.c)
			must(b, err)
			for i, p := range benchCore.ps {
				must(b, pw.Write(benchCore.ids[i], p))
			}
			must(b, pw.Flush())
			must(b, f.Close())
		}
	})
	c, ps := benchCore.c, benchCore.ps
	for _, prm := range benchModes {
		b.Run(string(prm.Mode), func(b *testing.B) {
			var tokens, items int64
			heap := watchHeap()
			cpu0 := cpuSeconds()
			b.ResetTimer()
			// Items are dropped once counted, their arrays recycled as the
			// stage recycles them once written (Python frees them by
			// reference counting).
			pool := new(Pool)
			for range b.N {
				tokens, items = 0, 0
				for _, p := range ps {
					its, _, err := pool.Segment(c, p, prm)
					if err != nil {
						b.Fatal(err)
					}
					items += int64(len(its))
					for _, it := range its {
						tokens += int64(len(it.IDs))
					}
					pool.Release(its)
				}
			}
			b.StopTimer()
			sec := b.Elapsed().Seconds() / float64(b.N)
			cpu := (cpuSeconds() - cpu0) / float64(b.N)
			b.ReportMetric(float64(len(ps))/sec, "traj/s")
			b.ReportMetric(float64(len(ps))/cpu, "traj/cpu-s")
			b.ReportMetric(float64(tokens)/sec, "tokens/s")
			b.ReportMetric(float64(items), "items")
			b.ReportMetric(heap.MB(), "peak-heap-MB")
		})
	}
}

var benchLake struct {
	once sync.Once
	dir  string
	l    *lake.Lake
}

// BenchmarkSegmentRun times the whole stage on a lake: streaming
// trajectories and steps, rendering with the Qwen tokenizer and chat
// template, sizing screenshots from the blobs table, segmenting on
// GOMAXPROCS workers and writing the segments files.
func BenchmarkSegmentRun(b *testing.B) {
	enc := qwen(b)
	benchLake.once.Do(func() {
		dir, err := os.MkdirTemp("", "segment-bench-")
		must(b, err)
		benchLake.dir = dir
		d := synth.Generate(enc, synth.Options{Seed: 1, Trajectories: benchTrajs, Turns: benchTurns, Screenshots: 20, Width: benchWidth, Height: benchHeight})
		benchLake.l, _ = commitData(b, filepath.Join(dir, "lake"), d, false)
	})
	for _, prm := range benchModes {
		b.Run(string(prm.Mode), func(b *testing.B) {
			// Each mode replaces the segments of the previous one: run on
			// the head, or the commit would conflict with it.
			m, err := benchLake.l.At(context.Background(), lake.MainRef)
			if err != nil {
				b.Fatal(err)
			}
			prm.Workers = runtime.GOMAXPROCS(0)
			cfg := config(enc, prm)
			cfg.Image = chat.DefaultImageSpec()
			var res *Result
			heap := watchHeap()
			cpu0 := cpuSeconds()
			b.ResetTimer()
			for range b.N {
				var err error
				if res, err = Run(context.Background(), benchLake.l, m, cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			sec := b.Elapsed().Seconds() / float64(b.N)
			cpu := (cpuSeconds() - cpu0) / float64(b.N)
			b.ReportMetric(float64(res.Summary.Trajectories)/sec, "traj/s")
			b.ReportMetric(cpu, "cpu-s/op")
			b.ReportMetric(float64(res.Summary.Tokens)/sec, "tokens/s")
			b.ReportMetric(float64(res.Summary.Items), "items")
			b.ReportMetric(float64(len(res.Files)), "files")
			b.ReportMetric(heap.MB(), "peak-heap-MB")
		})
	}
}

// BenchmarkSegmentShardMerge times a sharded run of the window mode on the
// BenchmarkSegmentRun lake: 4 shards one after the other (reported as
// shards-cpu-s), then `lake merge` of their fragments (the timed op), which
// commits the snapshot the unsharded run commits.
func BenchmarkSegmentShardMerge(b *testing.B) {
	enc := qwen(b)
	benchLake.once.Do(func() {
		dir, err := os.MkdirTemp("", "segment-bench-")
		must(b, err)
		benchLake.dir = dir
		d := synth.Generate(enc, synth.Options{Seed: 1, Trajectories: benchTrajs, Turns: benchTurns, Screenshots: 20, Width: benchWidth, Height: benchHeight})
		benchLake.l, _ = commitData(b, filepath.Join(dir, "lake"), d, false)
	})
	ctx := context.Background()
	l := benchLake.l
	m, err := l.At(ctx, lake.MainRef)
	must(b, err)
	const n = 4
	prm := Params{Mode: ModeWindow, K: DefaultK, Delta: DefaultDelta, Workers: runtime.GOMAXPROCS(0)}
	cfg := config(enc, prm)
	cfg.Image = chat.DefaultImageSpec()
	cpu0 := cpuSeconds()
	var items int64
	for i := 0; i < n; i++ {
		c := cfg
		c.Shard = shard.Spec{Index: i, Count: n}
		res, err := Run(ctx, l, m, c)
		must(b, err)
		items += res.Summary.Items
	}
	shardsCPU := cpuSeconds() - cpu0
	var res *shard.MergeResult
	heap := watchHeap()
	cpu0 = cpuSeconds()
	b.ResetTimer()
	for range b.N {
		if res, err = shard.Merge(ctx, l, shard.MergeOptions{Stage: Stage, Input: m.ID, Shards: n}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(shardsCPU, "shards-cpu-s")
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "merge-cpu-s/op")
	b.ReportMetric(float64(items), "items")
	b.ReportMetric(float64(res.Rows[schemas.Segments.Name]), "merged-rows")
	b.ReportMetric(heap.MB(), "peak-heap-MB")
}

// cpuSeconds is the process's user and system CPU time (all threads, the
// GC's included), to compare with Python's time.process_time on a busy
// machine where wall time mostly measures the neighbours.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchLake.dir != "" {
		os.RemoveAll(benchLake.dir)
	}
	os.Exit(code)
}
