package notebook

import (
	"fmt"
	"strconv"
	"strings"
)

// Chart types.
var ChartTypes = []string{"line", "bar", "histogram", "scatter"}

// Chart is a cell's chart directive:
//
//	line      x=COL y=COL[,COL...] [series=COL]   one path per series, a point per row
//	bar       x=COL y=COL[,COL...] [series=COL]   grouped bars, x is categorical
//	histogram x=COL [series=COL] [bins=N] [min=F] [max=F]   counts of x in N equal bins
//	scatter   x=COL y=COL[,COL...] [series=COL]   a point per row
//
// Every chart also takes xlabel= and ylabel=; values with spaces are
// quoted: ylabel="success rate". Line and scatter charts take
// yscale=auto|linear: auto (the default) clips the y axis to the bulk of
// the points when a few outliers would flatten everything else (a loss
// spike), and draws the clipped points on the axis edge, marked and
// counted; linear always shows the full range.
type Chart struct {
	Type   string
	X      string
	Y      []string
	Series string
	Bins   int
	Min    *float64
	Max    *float64
	XLabel string
	YLabel string
	YScale string // auto or linear
}

// ParseChart parses the text after `-- chart:`.
func ParseChart(spec string) (*Chart, error) {
	toks, err := tokens(spec)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("chart: want a type (%s) and x=COLUMN", strings.Join(ChartTypes, ", "))
	}
	c := &Chart{Type: strings.ToLower(toks[0]), Bins: 10, YScale: "auto"}
	known := false
	for _, t := range ChartTypes {
		known = known || t == c.Type
	}
	if !known {
		return nil, fmt.Errorf("chart: unknown type %q (want %s)", toks[0], strings.Join(ChartTypes, ", "))
	}
	for _, t := range toks[1:] {
		k, v, ok := strings.Cut(t, "=")
		if !ok || v == "" {
			return nil, fmt.Errorf("chart: %q is not key=value", t)
		}
		switch strings.ToLower(k) {
		case "x":
			c.X = v
		case "y":
			for _, y := range strings.Split(v, ",") {
				if y = strings.TrimSpace(y); y != "" {
					c.Y = append(c.Y, y)
				}
			}
		case "series":
			c.Series = v
		case "bins":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 200 {
				return nil, fmt.Errorf("chart: bins=%s: want a number in 1..200", v)
			}
			c.Bins = n
		case "min", "max":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("chart: %s=%s: want a number", k, v)
			}
			if strings.ToLower(k) == "min" {
				c.Min = &f
			} else {
				c.Max = &f
			}
		case "xlabel":
			c.XLabel = v
		case "ylabel":
			c.YLabel = v
		case "yscale":
			if v != "auto" && v != "linear" {
				return nil, fmt.Errorf("chart: yscale=%s: want auto or linear", v)
			}
			c.YScale = v
		default:
			return nil, fmt.Errorf("chart: unknown key %q (want x, y, series, bins, min, max, xlabel, ylabel, yscale)", k)
		}
	}
	if c.X == "" {
		return nil, fmt.Errorf("chart: %s needs x=COLUMN", c.Type)
	}
	if c.Type != "histogram" && len(c.Y) == 0 {
		return nil, fmt.Errorf("chart: %s needs y=COLUMN", c.Type)
	}
	if c.Type == "histogram" && len(c.Y) > 0 {
		return nil, fmt.Errorf("chart: histogram counts x; it takes no y (use bar for pre-counted bins)")
	}
	if c.Min != nil && c.Max != nil && *c.Min >= *c.Max {
		return nil, fmt.Errorf("chart: min=%v must be below max=%v", *c.Min, *c.Max)
	}
	return c, nil
}

// tokens splits on spaces, keeping key="quoted value" together.
func tokens(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inQuote := false
	started := false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			started = true
		case (r == ' ' || r == '\t') && !inQuote:
			if started {
				out = append(out, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unclosed quote in %q", s)
	}
	if started {
		out = append(out, cur.String())
	}
	return out, nil
}
