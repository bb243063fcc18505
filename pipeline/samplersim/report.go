package samplersim

import (
	"github.com/cualake/cualake/schemas"

	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// JSON renders the result as {"uniform": {"final_eval_reward": ...,
// "zero_variance_share": ..., "series": [...]}, "frontier": {...}, ...},
// indented, keys sorted: identical results give identical bytes.
func (r *Result) JSON() ([]byte, error) {
	return json.MarshalIndent(r.Samplers, "", "  ")
}

// Row is one iteration of one sampler; the type is the sampler_sim table's.
type Row = schemas.SamplerSim

// Rows flattens the result, sorted by sampler then iteration.
func (r *Result) Rows() []Row {
	var out []Row
	for _, name := range r.names() {
		for _, p := range r.Samplers[name].Series {
			out = append(out, Row{Sampler: name, Iteration: int32(p.Iteration), EvalReward: p.EvalReward, EvalRewardSD: p.EvalRewardSD,
				ZeroVarianceShare: p.ZeroVarianceShare, FrontierSize: p.FrontierSize, TrainGroups: p.TrainGroups, Seeds: int32(len(r.Config.Seeds))})
		}
	}
	return out
}

func (r *Result) names() []string {
	names := make([]string, 0, len(r.Samplers))
	for n := range r.Samplers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Summary is a short plain-text table: final eval reward (± sd over
// seeds), its paired difference to uniform (mean and min/max over seeds),
// zero-variance share, final frontier size, and the iteration at which each
// sampler first reaches uniform's final reward.
func (r *Result) Summary() string {
	var b bytes.Buffer
	u, hasU := r.Samplers["uniform"]
	fmt.Fprintf(&b, "%-11s %18s %28s %9s %9s %12s\n", "sampler", "final eval reward", "vs uniform: mean [min, max]", "zero-var", "frontier", "reach unif.")
	for _, name := range r.names() {
		s := r.Samplers[name]
		reach, diff := "-", "-"
		if hasU {
			for _, p := range s.Series {
				if p.EvalReward >= u.FinalEvalReward {
					reach = strconv.Itoa(p.Iteration)
					break
				}
			}
			lo, hi, mean := math.Inf(1), math.Inf(-1), 0.0
			for i, v := range s.FinalEvalBySeed {
				d := v - u.FinalEvalBySeed[i]
				lo, hi, mean = math.Min(lo, d), math.Max(hi, d), mean+d/float64(len(s.FinalEvalBySeed))
			}
			diff = fmt.Sprintf("%+.4f [%+.4f, %+.4f]", mean, lo, hi)
		}
		last := s.Series[len(s.Series)-1]
		fmt.Fprintf(&b, "%-11s %11.4f ± %.4f %28s %9.3f %9.0f %12s\n", name, s.FinalEvalReward, s.FinalEvalRewardSD, diff, s.ZeroVarianceShare, last.FrontierSize, reach)
	}
	return b.String()
}

// colors fixes one color per sampler so charts stay comparable.
var colors = map[string]string{
	"uniform": "#7f7f7f", "frontier": "#d62728", "dtac": "#1f77b4", "curriculum": "#2ca02c", "dapo": "#ff7f0e",
}

// SVG renders the evaluation reward per iteration, one line per sampler, as
// a hand-written SVG document. Coordinates are printed with two decimals, so
// identical results give identical bytes.
func (r *Result) SVG() []byte {
	const w, h, left, right, top, bottom = 760.0, 460.0, 64.0, 150.0, 40.0, 52.0
	pw, ph := w-left-right, h-top-bottom
	lo, hi := math.Inf(1), math.Inf(-1)
	maxIt := 1
	for _, s := range r.Samplers {
		for _, p := range s.Series {
			lo, hi = math.Min(lo, p.EvalReward), math.Max(hi, p.EvalReward)
			maxIt = max(maxIt, p.Iteration)
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	lo, hi = math.Floor(lo*20)/20, math.Ceil(hi*20)/20
	if hi <= lo {
		hi = lo + 0.05
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
	xOf := func(it int) float64 { return left + pw*float64(it)/float64(maxIt) }
	yOf := func(v float64) float64 { return top + ph*(1-(v-lo)/(hi-lo)) }

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="12">`+"\n", f(w), f(h), f(w), f(h))
	fmt.Fprintf(&b, `<rect width="%s" height="%s" fill="#ffffff"/>`+"\n", f(w), f(h))
	fmt.Fprintf(&b, `<text x="%s" y="22" font-size="14" text-anchor="middle">Evaluation reward per iteration (B=%d, n=%d, mean of %d seeds)</text>`+"\n",
		f(left+pw/2), r.Config.BatchSize, r.Config.GroupSize, len(r.Config.Seeds))
	// Grid and y ticks every 0.05.
	for k := 0; lo+0.05*float64(k) <= hi+1e-9; k++ {
		v := lo + 0.05*float64(k)
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`+"\n", f(left), f(y), f(left+pw), f(y))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`+"\n", f(left-6), f(y+4), f(v))
	}
	step := max(1, maxIt/6)
	for it := 0; it <= maxIt; it += step {
		x := xOf(it)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#000000"/>`+"\n", f(x), f(top+ph), f(x), f(top+ph+4))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%d</text>`+"\n", f(x), f(top+ph+18), it)
	}
	fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#000000"/>`+"\n", f(left), f(top), f(pw), f(ph))
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">iteration</text>`+"\n", f(left+pw/2), f(h-12))
	fmt.Fprintf(&b, `<text x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">mean success on the evaluation set</text>`+"\n", f(top+ph/2), f(top+ph/2))
	for i, name := range r.names() {
		color, ok := colors[name]
		if !ok {
			color = "#000000"
		}
		var pts bytes.Buffer
		for k, p := range r.Samplers[name].Series {
			if k > 0 {
				pts.WriteByte(' ')
			}
			pts.WriteString(f(xOf(p.Iteration)) + "," + f(yOf(p.EvalReward)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, pts.String())
		ly := top + 14 + 20*float64(i)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`+"\n", f(left+pw+12), f(ly), f(left+pw+36), f(ly), color)
		fmt.Fprintf(&b, `<text x="%s" y="%s">%s</text>`+"\n", f(left+pw+42), f(ly+4), name)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
