package notebook

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/cualake/cualake/query"
)

// Chart geometry, in SVG user units.
const (
	chartW     = 720
	chartH     = 360
	legendW    = 160
	marginL    = 64
	marginR    = 20
	marginT    = 32
	marginB    = 52
	rotatedB   = 96
	maxPoints  = 5000 // marks per chart; more rows are left out and said so
	maxLegend  = 14
	pointR     = 3.5
	fontFamily = "system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"
)

// palette is a colour-blind-friendly ten-colour cycle.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// Figure is a rendered chart.
type Figure struct {
	SVG    string
	Points int    // data marks drawn (one per point, bar or bin)
	Note   string // what was left out, if anything
}

type mark struct {
	series int
	x      any // the raw x value (a category) or its number
	xf     float64
	cat    int // index of x among the categories, for categorical axes
	y      float64
}

type plot struct {
	c          *Chart
	title      string
	series     []string
	marks      []mark
	cats       []string // categorical x values in order of first appearance
	numericX   bool
	skipped    int
	truncated  int
	binEdges   []float64
	clipNotes  []string // points drawn on a clipped axis's edge
	left, top  float64
	right, bot float64
}

// Render draws the chart for res. Errors name the missing or unusable
// column; rows with a NULL or non-numeric value are skipped and counted.
func (c *Chart) Render(res *query.Result, title string) (*Figure, error) {
	col := map[string]int{}
	for i, name := range res.Columns {
		if _, dup := col[name]; !dup {
			col[name] = i
		}
	}
	need := func(name string) (int, error) {
		i, ok := col[name]
		if !ok {
			return 0, fmt.Errorf("chart: column %q is not in the result (columns: %s)", name, strings.Join(res.Columns, ", "))
		}
		return i, nil
	}
	xi, err := need(c.X)
	if err != nil {
		return nil, err
	}
	si := -1
	if c.Series != "" {
		if si, err = need(c.Series); err != nil {
			return nil, err
		}
	}
	var yis []int
	for _, y := range c.Y {
		i, err := need(y)
		if err != nil {
			return nil, err
		}
		yis = append(yis, i)
	}
	p := &plot{c: c, title: title}
	if c.Type == "histogram" {
		if err := p.histogram(res, xi, si); err != nil {
			return nil, err
		}
	} else {
		p.collect(res, xi, si, yis)
	}
	return p.draw(), nil
}

func (p *plot) seriesIndex(name string, index map[string]int) int {
	if k, ok := index[name]; ok {
		return k
	}
	index[name] = len(p.series)
	p.series = append(p.series, name)
	return index[name]
}

// collect turns rows into marks for line, bar and scatter charts.
func (p *plot) collect(res *query.Result, xi, si int, yis []int) {
	// x is numeric when every non-null value is a number; bars always
	// treat x as categories.
	p.numericX = p.c.Type != "bar"
	anyX := false
	for _, r := range res.Rows {
		if r[xi] == nil {
			continue
		}
		anyX = true
		if _, ok := numeric(r[xi]); !ok {
			p.numericX = false
		}
	}
	p.numericX = p.numericX && anyX
	sIdx, cIdx := map[string]int{}, map[string]int{}
	for _, r := range res.Rows {
		if r[xi] == nil {
			p.skipped += len(yis)
			continue
		}
		sname := ""
		if si >= 0 {
			sname = formatValue(r[si])
		}
		for k, yi := range yis {
			y, ok := numeric(r[yi])
			if !ok {
				p.skipped++
				continue
			}
			if len(p.marks) >= maxPoints {
				p.truncated++
				continue
			}
			name := sname
			switch {
			case si < 0:
				name = p.c.Y[k]
			case len(yis) > 1:
				name = sname + " · " + p.c.Y[k]
			}
			m := mark{series: p.seriesIndex(name, sIdx), x: r[xi], y: y}
			if p.numericX {
				m.xf, _ = numeric(r[xi])
			} else {
				key := formatValue(r[xi])
				if _, ok := cIdx[key]; !ok {
					cIdx[key] = len(p.cats)
					p.cats = append(p.cats, key)
				}
				m.cat = cIdx[key]
			}
			p.marks = append(p.marks, m)
		}
	}
}

// histogram bins the numeric x column per series.
func (p *plot) histogram(res *query.Result, xi, si int) error {
	type obs struct {
		s int
		v float64
	}
	var vals []obs
	sIdx := map[string]int{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range res.Rows {
		v, ok := numeric(r[xi])
		if !ok {
			if r[xi] != nil {
				return fmt.Errorf("chart: histogram x=%s must be numeric, got %T", p.c.X, r[xi])
			}
			p.skipped++
			continue
		}
		name := p.c.X
		if si >= 0 {
			name = formatValue(r[si])
		}
		vals = append(vals, obs{p.seriesIndex(name, sIdx), v})
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if p.c.Min != nil {
		lo = *p.c.Min
	}
	if p.c.Max != nil {
		hi = *p.c.Max
	}
	if len(vals) == 0 {
		return nil
	}
	if lo >= hi {
		lo, hi = lo-0.5, lo+0.5
	}
	bins := p.c.Bins
	width := (hi - lo) / float64(bins)
	counts := make([][]int, len(p.series))
	for s := range counts {
		counts[s] = make([]int, bins)
	}
	for _, o := range vals {
		if o.v < lo || o.v > hi {
			p.skipped++
			continue
		}
		b := int((o.v - lo) / width)
		if b >= bins { // the top edge belongs to the last bin
			b = bins - 1
		}
		counts[o.s][b]++
	}
	p.binEdges = make([]float64, bins+1)
	for b := range p.binEdges {
		p.binEdges[b] = lo + float64(b)*width
	}
	p.binEdges[bins] = hi
	for b := 0; b < bins; b++ {
		for s := range p.series {
			p.marks = append(p.marks, mark{series: s, x: p.binEdges[b], xf: p.binEdges[b], cat: b, y: float64(counts[s][b])})
		}
	}
	return nil
}

// niceTicks covers [lo, hi] with about n round-numbered ticks.
func niceTicks(lo, hi float64, n int) (ticks []float64, step float64) {
	if hi <= lo {
		hi = lo + 1
	}
	step = niceNum((hi - lo) / float64(n))
	start := math.Floor(lo/step) * step
	end := math.Ceil(hi/step) * step
	for k := 0; ; k++ {
		v := start + float64(k)*step
		if v > end+step/2 {
			break
		}
		ticks = append(ticks, v)
	}
	return ticks, step
}

func niceNum(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	exp := math.Floor(math.Log10(x))
	f := x / math.Pow(10, exp)
	var nf float64
	switch {
	case f <= 1:
		nf = 1
	case f <= 2:
		nf = 2
	case f <= 2.5:
		nf = 2.5
	case f <= 5:
		nf = 5
	default:
		nf = 10
	}
	return nf * math.Pow(10, exp)
}

// tickLabel prints a tick value with as many decimals as the step needs.
func tickLabel(v, step float64) string {
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
		if niceNum(step)/math.Pow(10, -float64(dec)) == 2.5 {
			dec++
		}
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s
}

func esc(s string) string { return html.EscapeString(s) }

func truncLabel(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// draw lays out axes, marks and legend.
func (p *plot) draw() *Figure {
	var b strings.Builder
	legend := len(p.series) > 1 || p.c.Series != ""
	w := float64(chartW)
	if legend {
		w += legendW
	}
	categorical := !p.numericX && p.c.Type != "histogram"
	rotate := false
	if categorical {
		maxLen := 0
		for _, c := range p.cats {
			maxLen = max(maxLen, len([]rune(c)))
		}
		band := (chartW - marginL - marginR) / math.Max(1, float64(len(p.cats)))
		rotate = float64(min(maxLen, 18))*6.5 > band
	}
	bottom := float64(marginB)
	if rotate {
		bottom = rotatedB
	}
	p.left, p.top, p.right, p.bot = marginL, marginT, chartW-marginR, chartH-bottom
	h := float64(chartH)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart-svg" viewBox="0 0 %s %s" width="%s" height="%s" font-family="%s" font-size="11" role="img" aria-label="%s">`,
		coord(w), coord(h), coord(w), coord(h), fontFamily, esc(p.title))
	b.WriteString("\n")
	fmt.Fprintf(&b, `<rect class="bg" x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", coord(w), coord(h))
	if p.title != "" {
		fmt.Fprintf(&b, `<text class="chart-title" x="%s" y="18" font-size="13" font-weight="600" fill="#222">%s</text>`+"\n", coord(p.left), esc(truncLabel(p.title, 90)))
	}
	if len(p.marks) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%s" y="%s" text-anchor="middle" fill="#888">no data</text>`+"\n</svg>", coord(w/2), coord(h/2))
		return &Figure{SVG: b.String(), Note: p.note()}
	}

	// y scale
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, m := range p.marks {
		ylo, yhi = math.Min(ylo, m.y), math.Max(yhi, m.y)
	}
	if p.c.Type == "bar" || p.c.Type == "histogram" {
		ylo, yhi = math.Min(0, ylo), math.Max(0, yhi)
	}
	if ylo == yhi { // one value: show it against zero
		ylo, yhi = math.Min(0, ylo), math.Max(0, yhi)
		if ylo == yhi {
			yhi = 1
		}
	}
	clipped := false
	if (p.c.Type == "line" || p.c.Type == "scatter") && p.c.YScale != "linear" {
		var lo, hi float64
		if lo, hi, clipped = robustRange(p.marks); clipped {
			ylo, yhi = lo, hi
		}
	}
	yticks, ystep := niceTicks(ylo, yhi, 5)
	y0, y1 := yticks[0], yticks[len(yticks)-1]
	// Points beyond a clipped axis sit on its edge.
	ys := func(v float64) float64 { return p.bot - (min(max(v, y0), y1)-y0)/(y1-y0)*(p.bot-p.top) }
	var above, below int
	var maxAbove, minBelow float64 = math.Inf(-1), math.Inf(1)
	for _, m := range p.marks {
		if m.y > y1 {
			above++
			maxAbove = math.Max(maxAbove, m.y)
		} else if m.y < y0 {
			below++
			minBelow = math.Min(minBelow, m.y)
		}
	}
	if above > 0 {
		p.clipNotes = append(p.clipNotes, fmt.Sprintf("%d point(s) above %s drawn on the top edge (max %s)", above, tickLabel(y1, ystep), formatFloat(maxAbove)))
	}
	if below > 0 {
		p.clipNotes = append(p.clipNotes, fmt.Sprintf("%d point(s) below %s drawn on the bottom edge (min %s)", below, tickLabel(y0, ystep), formatFloat(minBelow)))
	}

	// x scale
	var xs func(m mark) float64
	var band float64
	var xticks []float64
	var xstep float64
	switch {
	case p.c.Type == "histogram":
		lo, hi := p.binEdges[0], p.binEdges[len(p.binEdges)-1]
		xs = func(m mark) float64 { return p.left + (m.xf-lo)/(hi-lo)*(p.right-p.left) }
		band = (p.right - p.left) / float64(len(p.binEdges)-1)
	case categorical:
		band = (p.right - p.left) / float64(len(p.cats))
		xs = func(m mark) float64 { return p.left + (float64(m.cat)+0.5)*band }
	default:
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, m := range p.marks {
			lo, hi = math.Min(lo, m.xf), math.Max(hi, m.xf)
		}
		if lo == hi {
			lo, hi = lo-1, hi+1
		}
		xticks, xstep = niceTicks(lo, hi, 8)
		if p.integralX() && xstep < 1 { // iterations and versions: no ticks between whole numbers
			xticks, xstep = niceTicks(math.Floor(lo), math.Ceil(hi), max(1, int(math.Ceil(hi)-math.Floor(lo))))
		}
		x0, x1 := xticks[0], xticks[len(xticks)-1]
		xs = func(m mark) float64 { return p.left + (m.xf-x0)/(x1-x0)*(p.right-p.left) }
	}

	// grid and y axis
	b.WriteString(`<g class="axis axis-y" stroke="#333">` + "\n")
	for _, t := range yticks {
		y := coord(ys(t))
		fmt.Fprintf(&b, `<line class="grid" x1="%s" x2="%s" y1="%s" y2="%s" stroke="#e6e6e6"/>`, coord(p.left), coord(p.right), y, y)
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`, coord(p.left-4), coord(p.left), y, y)
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" dominant-baseline="middle" stroke="none" fill="#444">%s</text>`+"\n", coord(p.left-7), y, tickLabel(t, ystep))
	}
	fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`+"\n", coord(p.left), coord(p.left), coord(p.top), coord(p.bot))
	b.WriteString("</g>\n")
	ylabel := p.c.YLabel
	if ylabel == "" {
		if p.c.Type == "histogram" {
			ylabel = "count"
		} else if len(p.c.Y) == 1 {
			ylabel = p.c.Y[0]
		}
	}
	if ylabel != "" {
		fmt.Fprintf(&b, `<text class="axis-label" x="14" y="%s" text-anchor="middle" transform="rotate(-90 14 %s)" fill="#444">%s</text>`+"\n",
			coord((p.top+p.bot)/2), coord((p.top+p.bot)/2), esc(ylabel))
	}

	// x axis
	b.WriteString(`<g class="axis axis-x" stroke="#333">` + "\n")
	fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`+"\n", coord(p.left), coord(p.right), coord(p.bot), coord(p.bot))
	xtick := func(x float64, label string) {
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`, coord(x), coord(x), coord(p.bot), coord(p.bot+4))
		if rotate {
			fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" transform="rotate(-40 %s %s)" stroke="none" fill="#444">%s</text>`+"\n",
				coord(x), coord(p.bot+14), coord(x), coord(p.bot+14), esc(label))
		} else {
			fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" stroke="none" fill="#444">%s</text>`+"\n", coord(x), coord(p.bot+16), esc(label))
		}
	}
	switch {
	case p.c.Type == "histogram":
		every := int(math.Ceil(float64(len(p.binEdges)) / 12))
		_, step := niceTicks(p.binEdges[0], p.binEdges[len(p.binEdges)-1], len(p.binEdges)-1)
		for k, e := range p.binEdges {
			if k%every == 0 || k == len(p.binEdges)-1 {
				xtick(xs(mark{xf: e}), tickLabel(e, step/2))
			}
		}
	case categorical:
		maxLabels := int((p.right - p.left) / 40)
		if rotate {
			maxLabels = int((p.right - p.left) / 14)
		}
		every := int(math.Ceil(float64(len(p.cats)) / float64(max(1, maxLabels))))
		for k, c := range p.cats {
			if k%every == 0 {
				xtick(p.left+(float64(k)+0.5)*band, truncLabel(c, 18))
			}
		}
	default:
		for _, t := range xticks {
			xtick(xs(mark{xf: t}), tickLabel(t, xstep))
		}
	}
	b.WriteString("</g>\n")
	xlabel := p.c.XLabel
	if xlabel == "" {
		xlabel = p.c.X
	}
	fmt.Fprintf(&b, `<text class="axis-label" x="%s" y="%s" text-anchor="middle" fill="#444">%s</text>`+"\n", coord((p.left+p.right)/2), coord(h-8), esc(xlabel))

	// marks, one group per series
	n := len(p.series)
	for s, name := range p.series {
		color := palette[s%len(palette)]
		fmt.Fprintf(&b, `<g class="series" data-series="%s" fill="%s" stroke="%s">`+"\n", esc(name), color, color)
		var ms []mark
		for _, m := range p.marks {
			if m.series == s {
				ms = append(ms, m)
			}
		}
		if p.c.Type == "line" {
			sorted := append([]mark(nil), ms...)
			sort.SliceStable(sorted, func(a, b int) bool {
				if p.numericX {
					return sorted[a].xf < sorted[b].xf
				}
				return sorted[a].cat < sorted[b].cat
			})
			var d strings.Builder
			for k, m := range sorted {
				op := "L"
				if k == 0 {
					op = "M"
				}
				fmt.Fprintf(&d, "%s%s %s ", op, coord(xs(m)), coord(ys(m.y)))
			}
			fmt.Fprintf(&b, `<path class="line" d="%s" fill="none" stroke-width="2"/>`+"\n", strings.TrimSpace(d.String()))
		}
		for _, m := range ms {
			xv := formatValue(m.x)
			tip := fmt.Sprintf("%s%s, %s", seriesPrefix(name), xv, formatFloat(m.y))
			switch p.c.Type {
			case "bar", "histogram":
				bw := band * 0.8 / float64(n)
				x := xs(m) - band*0.4 + float64(s)*bw
				if p.c.Type == "histogram" {
					x = xs(m) + band*0.1 + float64(s)*bw
					hiEdge := p.binEdges[m.cat+1]
					xv = formatFloat(m.xf)
					tip = fmt.Sprintf("%s[%s, %s%s: %s", seriesPrefix(name), formatFloat(m.xf), formatFloat(hiEdge),
						map[bool]string{true: "]", false: ")"}[m.cat == len(p.binEdges)-2], formatFloat(m.y))
				}
				top, bot := ys(math.Max(m.y, 0)), ys(math.Min(m.y, 0))
				fmt.Fprintf(&b, `<rect class="dp" x="%s" y="%s" width="%s" height="%s" stroke="none" data-series="%s" data-x="%s" data-y="%s"><title>%s</title></rect>`+"\n",
					coord(x), coord(top), coord(math.Max(bw-1, 0.5)), coord(math.Max(bot-top, 0)), esc(name), esc(xv), esc(formatFloat(m.y)), esc(tip))
			default:
				if m.y <= y1 && m.y >= y0 {
					fmt.Fprintf(&b, `<circle class="dp" cx="%s" cy="%s" r="%s" stroke="#ffffff" stroke-width="1" data-series="%s" data-x="%s" data-y="%s"><title>%s</title></circle>`+"\n",
						coord(xs(m)), coord(ys(m.y)), coord(pointR), esc(name), esc(xv), esc(formatFloat(m.y)), esc(tip))
					continue
				}
				// A clipped point: a triangle on the edge, pointing the way
				// its true value lies.
				x, y, d := xs(m), ys(m.y), 6.0
				if m.y < y0 {
					d = -d
				}
				fmt.Fprintf(&b, `<path class="dp clipped" d="M%s %sL%s %sL%s %sZ" stroke="#111111" stroke-width="1" data-series="%s" data-x="%s" data-y="%s"><title>%s (clipped)</title></path>`+"\n",
					coord(x), coord(y-d), coord(x-d*0.8), coord(y+d*0.6), coord(x+d*0.8), coord(y+d*0.6), esc(name), esc(xv), esc(formatFloat(m.y)), esc(tip))
			}
		}
		b.WriteString("</g>\n")
	}

	if clipped && len(p.clipNotes) > 0 {
		fmt.Fprintf(&b, `<text class="clip-note" x="%s" y="%s" text-anchor="end" font-size="11" fill="#b42318">axis clipped: %s</text>`+"\n",
			coord(p.right), coord(p.top-8), esc(truncLabel(strings.Join(p.clipNotes, "; "), 110)))
	}
	if legend {
		lx := float64(chartW) + 4
		b.WriteString(`<g class="legend">` + "\n")
		if p.c.Series != "" {
			fmt.Fprintf(&b, `<text x="%s" y="%s" font-weight="600" fill="#222">%s</text>`+"\n", coord(lx), coord(p.top), esc(truncLabel(p.c.Series, 22)))
		}
		for s, name := range p.series {
			if s == maxLegend {
				fmt.Fprintf(&b, `<text x="%s" y="%s" fill="#666">+%d more</text>`+"\n", coord(lx), coord(p.top+18*float64(s+1)), len(p.series)-maxLegend)
				break
			}
			y := p.top + 18*float64(s+1)
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="12" height="12" fill="%s"/><text x="%s" y="%s" dominant-baseline="middle" fill="#222">%s</text>`+"\n",
				coord(lx), coord(y-6), palette[s%len(palette)], coord(lx+18), coord(y), esc(truncLabel(name, 22)))
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>")
	return &Figure{SVG: b.String(), Points: len(p.marks), Note: p.note()}
}

// integralX reports whether every x value is a whole number.
func (p *plot) integralX() bool {
	for _, m := range p.marks {
		if m.xf != math.Trunc(m.xf) {
			return false
		}
	}
	return true
}

func seriesPrefix(name string) string {
	if name == "" {
		return ""
	}
	return name + ": "
}

func (p *plot) note() string {
	parts := append([]string(nil), p.clipNotes...)
	if p.skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d value(s) skipped (NULL, not numeric or outside the range)", p.skipped))
	}
	if p.truncated > 0 {
		parts = append(parts, fmt.Sprintf("%d point(s) beyond the first %d not drawn", p.truncated, maxPoints))
	}
	return strings.Join(parts, "; ")
}

// robustRange is the y range of the bulk of the marks when a few outliers
// would flatten it. Of the points sorted by value, the top (bottom) k are
// outliers when the k-th from the end lies more than ten times as far
// from the median as the next one in; k is the largest such count up to a
// twentieth of the points (at least one). So a loss spike of 76,000 among
// values below 3 is clipped, while a curve's high start, or a spread that
// is merely wide, is never hidden.
func robustRange(marks []mark) (lo, hi float64, ok bool) {
	n := len(marks)
	if n < 8 {
		return 0, 0, false
	}
	ys := make([]float64, n)
	for i, m := range marks {
		ys[i] = m.y
	}
	sort.Float64s(ys)
	med := ys[n/2]
	maxK := max(1, n/20)
	hiIdx, loIdx := n-1, 0
	for k := 1; k <= maxK; k++ {
		if ys[n-k]-med > 10*(ys[n-1-k]-med) {
			hiIdx = n - 1 - k
		}
		if med-ys[k-1] > 10*(med-ys[k]) {
			loIdx = k
		}
	}
	lo, hi = ys[loIdx], ys[hiIdx]
	if (hiIdx == n-1 && loIdx == 0) || hi <= lo {
		return 0, 0, false
	}
	return lo, hi, true
}
