//go:build ignore

// check compares two bench reports (bench/results.md as committed and a
// fresh BENCH_QUICK=1 run) and prints the rows whose headline figure, the
// first number of the second column, moved by more than 2x either way. It
// is for people reading a change's effect, not a CI gate: it exits 0.
//
//	go run bench/check.go bench/results.md bench/out-quick/results.md
package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

var number = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?`)

// rows maps "section / first cell" to the first number of the second cell
// of every markdown table row in the file.
func rows(path string) (map[string]float64, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	out, section := map[string]float64{}, ""
	var order []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "#") {
			section = strings.TrimSpace(strings.TrimLeft(l, "#"))
			continue
		}
		cells := strings.Split(l, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[2]), "---") {
			continue
		}
		x, err := strconv.ParseFloat(number.FindString(cells[2]), 64)
		if err != nil {
			continue // the header row, or a row without a figure
		}
		key := section + " / " + strings.TrimSpace(cells[1])
		if _, ok := out[key]; !ok {
			order = append(order, key)
		}
		out[key] = x
	}
	return out, order, nil
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run bench/check.go COMMITTED.md FRESH.md")
		os.Exit(2)
	}
	old, order, err := rows(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench check:", err)
		os.Exit(1)
	}
	fresh, _, err := rows(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench check:", err)
		os.Exit(1)
	}
	moved := 0
	for _, k := range order {
		a := old[k]
		b, ok := fresh[k]
		if !ok || a == 0 || b == 0 {
			continue
		}
		if r := b / a; r > 2 || r < 0.5 {
			fmt.Printf("moved %.2fx: %s: %g -> %g\n", r, k, a, b)
			moved++
		}
	}
	fmt.Printf("bench check: %d of %d rows moved by more than 2x (%s -> %s)\n", moved, len(order), os.Args[1], os.Args[2])
}
