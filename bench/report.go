//go:build ignore

// report assembles bench/results.md from one `make bench` run: every Go
// benchmark's headline figure, the baseline measured in the same run, the
// ratio and the goal.
//
//	go run bench/report.go bench/out bench/results.md
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// metric is one benchmark's headline: which unit to show and the goal.
type metric struct {
	unit, goal string
}

var headline = map[string]metric{
	"BenchmarkCommitSteps1M":                      {"rows/s", "commit 1,000,000 steps rows"},
	"BenchmarkCommitAfterHistory/snapshots=10":    {"ns/op", "flat in history"},
	"BenchmarkCommitAfterHistory/snapshots=1000":  {"ns/op", "flat in history"},
	"BenchmarkQueryGroupBy/cualake":               {"ns/op", "ratio to plain DuckDB close to 1"},
	"BenchmarkFrontierSelect1M":                   {"ns/op", "< 100 ms"},
	"BenchmarkDTACSelect1M":                       {"ns/op", "< 100 ms"},
	"BenchmarkUpdateEMA1Mx8":                      {"ns/op", "EMA for 1M tasks x 8 rollouts"},
	"BenchmarkSegmentCore/window":                 {"traj/cpu-s", ">= 20x Python Algorithm 2"},
	"BenchmarkSegmentRun/window":                  {"traj/s", "memory flat in trajectories"},
	"BenchmarkStepScreenshot":                     {"steps/s", ">= 200 steps/s at 1280x800"},
	"BenchmarkStepTreeOnly":                       {"steps/s", "far above screenshots"},
	"BenchmarkOracleEpisode":                      {"episodes/s", ""},
	"BenchmarkRandomEpisode":                      {"episodes/s", ""},
	"BenchmarkPolicyForwardBackward":              {"tokens/cpu-s", ">= 0.9x PyTorch"},
	"BenchmarkCausalForwardBackward":              {"tokens/cpu-s", ">= 1.0x PyTorch (same model, item, threads; median of 7)"},
	"BenchmarkImportOSWorldResults/episodes=1000": {"episodes/s", "1,000 episodes x 30 steps with PNGs; memory flat"},
	"BenchmarkCommitVsDuckDBCopy":                 {"ours-median-rows/s", ">= 0.5x DuckDB COPY of the same rows to zstd Parquet, same row groups"},
	"BenchmarkEncode":                             {"tokens/s", ""},
	"BenchmarkNearDuplicates10k":                  {"ns/op", "10k x 10k pools quickly"},
	"BenchmarkSynthesizeBuiltin/workers=2":        {"accepted/s", "builtin roles"},
}

var line = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

func main() {
	dir, out := os.Args[1], os.Args[2]
	values := map[string]map[string]float64{}
	// go.txt is absent when only a part ran (make bench-startup): that
	// part's section is the report.
	f, err := os.Open(filepath.Join(dir, "go.txt"))
	if err != nil && !os.IsNotExist(err) {
		fail(err)
	}
	if f == nil {
		f, _ = os.Open(os.DevNull)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v := map[string]float64{}
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			if x, err := strconv.ParseFloat(fields[i], 64); err == nil {
				v[fields[i+1]] = x
			}
		}
		values[m[1]] = v
	}
	py := readJSON(filepath.Join(dir, "alg2-window.json"))
	torch := readJSON(filepath.Join(dir, "torch.json"))
	causalTorch := readJSON(filepath.Join(dir, "causal-torch.json"))
	causalJemalloc := readJSON(filepath.Join(dir, "causal-torch-jemalloc.json"))
	duck := values["BenchmarkQueryGroupBy/duckdb"]["ns/op"]

	var names []string
	for n := range values {
		if _, ok := headline[n]; ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	if len(names) > 0 {
		b.WriteString("# Benchmarks\n\nOne `make bench` run on this machine; baselines measured in the same run.\n\n")
	} else {
		b.WriteString("# Start-up benchmark\n\nOne `make bench-startup` run on this machine; baselines measured in the same run. " +
			"`make bench` puts the same section in bench/results.md.\n\n")
	}
	machineHeader(&b, filepath.Join(dir, "machine.txt"))
	if len(names) > 0 {
		b.WriteString("| benchmark | ours | baseline | ratio | goal |\n| --- | --- | --- | --- | --- |\n")
	}
	for _, n := range names {
		h := headline[n]
		ours := values[n][h.unit]
		base, ratio := "", ""
		switch n {
		case "BenchmarkQueryGroupBy/cualake":
			base, ratio = fmt.Sprintf("%.0f ns/op (plain DuckDB)", duck), fmt.Sprintf("%.2fx time", ours/duck)
		case "BenchmarkCommitVsDuckDBCopy":
			v := values[n]
			if d := v["duckdb-median-rows/s"]; d > 0 {
				r := ours / d
				base = fmt.Sprintf("%.0f rows/s median, %.0f min (DuckDB COPY); ours min %.0f; 5 runs interleaved", d, v["duckdb-min-rows/s"], v["ours-min-rows/s"])
				ratio = fmt.Sprintf("%.2fx, goal %s", r, map[bool]string{true: "met", false: "not met"}[r >= 0.5])
			}
		case "BenchmarkSegmentCore/window":
			if p, ok := py["trajectories_per_cpu_s"].(float64); ok && p > 0 {
				base, ratio = fmt.Sprintf("%.1f traj/cpu-s (Python)", p), fmt.Sprintf("%.1fx", ours/p)
			}
		case "BenchmarkPolicyForwardBackward":
			if p, ok := torch["tokens_per_cpu_s"].(float64); ok && p > 0 {
				base, ratio = fmt.Sprintf("%.0f tokens/cpu-s (PyTorch)", p), fmt.Sprintf("%.2fx", ours/p)
			}
		case "BenchmarkCausalForwardBackward":
			// PyTorch's default CPU allocator refaults its activations'
			// pages every step (as libtorch's did before trainer/internal/tx
			// installed a caching allocator), so it is also measured under
			// jemalloc without purging, the fair comparison.
			p, _ := causalTorch["tokens_per_cpu_s"].(float64)
			j, _ := causalJemalloc["tokens_per_cpu_s"].(float64)
			if j > 0 {
				base, ratio = fmt.Sprintf("%.0f tokens/cpu-s (PyTorch + jemalloc; %.0f with its default allocator)", j, p), fmt.Sprintf("%.2fx", ours/j)
			} else if p > 0 {
				base, ratio = fmt.Sprintf("%.0f tokens/cpu-s (PyTorch)", p), fmt.Sprintf("%.2fx", ours/p)
			}
		}
		extra := ""
		if mb, ok := values[n]["peak-heap-MB"]; ok {
			extra = fmt.Sprintf(", peak heap %.0f MB", mb)
		}
		fmt.Fprintf(&b, "| %s | %s %s%s | %s | %s | %s |\n", strings.TrimPrefix(n, "Benchmark"), fmtNum(ours), h.unit, extra, base, ratio, h.goal)
	}
	segmentsSection(&b, readJSON(filepath.Join(dir, "segments.json")))
	startupSection(&b, filepath.Join(dir, "startup.tsv"), filepath.Join(dir, "smaps.txt"))
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		fail(err)
	}
	fmt.Print(b.String())
}

// segmentsSection reports scripts/bench-segments.sh: training time of the
// same rollouts cut in each mode (ScaleCUA Fig. 6(b)) and window mode per K
// (Fig. 5).
func segmentsSection(b *strings.Builder, seg map[string]any) {
	runs, _ := seg["runs"].(map[string]any)
	if len(runs) == 0 {
		return
	}
	get := func(name, key string) float64 {
		r, _ := runs[name].(map[string]any)
		v, _ := r[key].(float64)
		return v
	}
	roll, _ := seg["rollouts"].(map[string]any)
	fmt.Fprintf(b, "\n## Visual Context Segmentation: training time per segment mode\n\n")
	fmt.Fprintf(b, "One iteration's committed rollouts of the causal policy (%v trajectories, %v turns), GRPO over the same groups "+
		"in the same optimiser steps (`scripts/bench-segments.sh`); only trajectories with a non-zero advantage train.\n\n",
		roll["trajectories"], roll["steps"])
	b.WriteString("| segments | items | tokens | trained tokens | optimiser steps | train seconds |\n| --- | --- | --- | --- | --- | --- |\n")
	order := []string{"trajectory", "step", "window", "window-k1", "window-k3", "window-k8", "window-k15"}
	for _, n := range order {
		if _, ok := runs[n]; !ok {
			continue
		}
		label := n
		if n == "window" {
			label = "window (K = Delta = 5)"
		} else if strings.HasPrefix(n, "window-k") {
			k := strings.TrimPrefix(n, "window-k")
			label = "window (K = Delta = " + k + ")"
		}
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %.0f | %.0f | %.1f |\n", label, get(n, "items"), get(n, "tokens"), get(n, "trainable_tokens"),
			get(n, "steps"), get(n, "train_seconds"))
	}
	if w := get("window", "train_seconds"); w > 0 {
		fmt.Fprintf(b, "\nstep / window training time: **%.2fx** (ScaleCUA Fig. 6(b): 2.83x end to end, actor phase 485 s -> 154 s; goal >= 2.5x)\n",
			get("step", "train_seconds")/w)
	}
}

// machineHeader prints scripts/bench.sh's machine.txt (key=value lines:
// CPU model, cores, BLAS, load average at start).
func machineHeader(b *strings.Builder, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var parts []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			parts = append(parts, fmt.Sprintf("%s: %s", k, v))
		}
	}
	fmt.Fprintf(b, "Machine: %s. It is shared with other agents' builds and tests, so wall times include waiting for a core; "+
		"CPU times (user+sys) do not.\n\n", strings.Join(parts, "; "))
}

// startupSection reports scripts/bench-startup.sh: whole processes, runs
// interleaved, min and median of each, ratio of medians.
func startupSection(b *strings.Builder, path, smaps string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	type run struct{ wall, cpu, rss []float64 }
	runs := map[string]*run{}
	var order []string
	sc := bufio.NewScanner(f)
	for first := true; sc.Scan(); first = false {
		col := strings.Split(sc.Text(), "\t")
		if first || len(col) != 4 {
			continue
		}
		r := runs[col[0]]
		if r == nil {
			r = &run{}
			runs[col[0]] = r
			order = append(order, col[0])
		}
		for i, dst := range []*[]float64{&r.wall, &r.cpu, &r.rss} {
			x, _ := strconv.ParseFloat(col[i+1], 64)
			*dst = append(*dst, x)
		}
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Start-up: whole processes\n\n`scripts/bench-startup.sh`: each command as its own process, %d runs interleaved after a warm-up; "+
		"peak RSS from getrusage of the child (GNU time). `bin/cualake` is built without libtorch and hands train, run, view, ui, "+
		"and rollout/segment with a checkpoint to `bin/cualake-torch` (cmd/internal/cli/torch.go); the cualake-torch rows are what "+
		"every command cost before.\n\n", len(runs[order[0]].wall))
	b.WriteString("| command | wall min / median | cpu median | peak RSS median | baseline (median) | ratio of medians | goal | met |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, n := range order {
		if strings.Contains(n, "(plain DuckDB)") {
			continue
		}
		r := runs[n]
		wall, cpu, rss := median(r.wall), median(r.cpu), median(r.rss)/1024
		base, ratio, goal, met := "", "", "", ""
		switch {
		case strings.Contains(n, "cualake-torch"):
			goal = "for comparison: libtorch loaded"
		case strings.HasPrefix(n, "query"):
			d := runs[n+" (plain DuckDB)"]
			if d == nil {
				break
			}
			dw := median(d.wall)
			base = fmt.Sprintf("%.2f s wall, %.2f cpu-s, %.0f MiB (plain DuckDB process, same files)", dw, median(d.cpu), median(d.rss)/1024)
			ratio = fmt.Sprintf("%.2fx wall, %.2fx cpu", wall/dw, cpu/median(d.cpu))
			goal = "<= 2x a plain DuckDB process"
			met = verdict(wall/dw <= 2, fmt.Sprintf("%.2fx", wall/dw), "")
		default:
			goal = "< 0.1 s and < 60 MiB"
			var why []string
			if wall >= 0.1 {
				why = append(why, fmt.Sprintf("wall %.2f s against %.2f cpu-s: the rest is waiting for a core on the shared machine", wall, cpu))
			}
			if rss >= 60 {
				why = append(why, "RSS is mostly the binary's own file pages (DuckDB and Arrow linked in); see the note below")
			}
			met = verdict(wall < 0.1 && rss < 60, fmt.Sprintf("%.2f s, %.1f MiB", wall, rss), strings.Join(why, "; "))
		}
		fmt.Fprintf(b, "| %s | %.2f / %.2f s | %.2f s | %.1f MiB | %s | %s | %s | %s |\n", n, minOf(r.wall), wall, cpu, rss, base, ratio, goal, met)
	}
	b.WriteString("\nThe fixed cost `cualake query` had over a plain DuckDB process: besides the query's own DuckDB database it opened " +
		"a second one, only to count the statements of the text, as costly to start as the first. It now opens only for a text " +
		"that json_serialize_sql does not take as exactly one SELECT, that is, one being refused (query/engine.go, vet). What " +
		"remains: the larger binary's start (the help row), one CREATE VIEW per table, which binds its Parquet files, and the " +
		"lineage table; the cpu ratio counts them, the wall ratio also the waits for a core.\n")
	// smaps.txt: "Rss:  60396 kB" lines of bin/cualake at main.main.
	kb := map[string]float64{}
	if data, err := os.ReadFile(smaps); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) == 3 {
				kb[strings.TrimSuffix(f[0], ":")], _ = strconv.ParseFloat(f[1], 64)
			}
		}
	}
	if kb["Rss"] > 0 {
		fmt.Fprintf(b, "\nRSS of `bin/cualake --help` at main.main, after every package's init (gdb, /proc/PID/smaps_rollup): %.1f MiB, "+
			"of which %.1f MiB anonymous (heap, stacks) and the rest the binary's own pages (DuckDB, Arrow and every pipeline package "+
			"are linked in; %.1f MiB of them mapped as 2 MiB huge pages, so one touched byte counts 2 MiB). Those pages are "+
			"shared page cache, not memory the process allocates, and how many map as huge pages depends on how the kernel "+
			"cached the file: the same binary measured 51 to 62 MiB across builds and runs here. A binary without DuckDB for the commands "+
			"that need none would map fewer of them; that split is not made.\n", kb["Rss"]/1024, kb["Anonymous"]/1024, kb["FilePmdMapped"]/1024)
	}
}

func verdict(ok bool, measured, why string) string {
	if ok {
		return "met (" + measured + ")"
	}
	if why != "" {
		return "not met (" + measured + "): " + why
	}
	return "not met (" + measured + ")"
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(x []float64) float64 {
	m := 0.0
	for i, v := range x {
		if i == 0 || v < m {
			m = v
		}
	}
	return m
}

func fmtNum(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.3g", x)
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func readJSON(p string) map[string]any {
	m := map[string]any{}
	if b, err := os.ReadFile(p); err == nil {
		json.Unmarshal(b, &m)
	}
	return m
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench report:", err)
	os.Exit(1)
}
