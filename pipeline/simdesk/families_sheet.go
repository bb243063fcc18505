package simdesk

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
)

var (
	items  = []string{"Pens", "Paper", "Stapler", "Folders", "Tape", "Markers", "Envelopes", "Binders", "Labels", "Clips", "Ink", "Notebooks"}
	cities = []string{"Berlin", "Lisbon", "Oslo", "Madrid", "Vienna", "Dublin", "Prague", "Warsaw", "Athens", "Rome"}
)

// salesTable is a header plus n rows of (Item, Amount, Units) with values
// derived from i, so every instance differs.
func salesTable(i, n int) [][]string {
	t := [][]string{{"Item", "Amount", "Units"}}
	for k := 0; k < n; k++ {
		amount := 10 + (i*37+k*53)%90
		units := 1 + (i*11+k*7)%20
		t = append(t, []string{pick(items, i+k*5), strconv.Itoa(amount), strconv.Itoa(units)})
	}
	return t
}

func tableCSV(t [][]string) string {
	s := &sheet.Sheet{Cells: t}
	return s.CSV()
}

func tableRule(t [][]string) *judge.Getter {
	rows := make([]any, len(t))
	for i, r := range t {
		cells := make([]any, len(r))
		for j, c := range r {
			cells[j] = c
		}
		rows[i] = cells
	}
	return rule(rows)
}

func column(t [][]string, c int) []float64 {
	var out []float64
	for _, r := range t[1:] {
		n, _ := strconv.ParseFloat(r[c], 64)
		out = append(out, n)
	}
	return out
}

func aggregate(fn string, v []float64) float64 {
	switch fn {
	case "SUM", "AVERAGE":
		t := 0.0
		for _, x := range v {
			t += x
		}
		if fn == "AVERAGE" {
			return t / float64(len(v))
		}
		return t
	case "MIN":
		return slices.Min(v)
	}
	return slices.Max(v)
}

func sheetFamilies() []family {
	exactNum := judge.Options{Tolerance: 1e-6}
	formula := judge.Options{IgnoreCase: true, Strip: true}
	return []family{
		{id: "sheet-formula", app: "sheet", abilities: []string{"open", "select_cell", "formula", "save"}, n: 16, gen: func(i int) taskSpec {
			fn := pick([]string{"SUM", "AVERAGE", "MIN", "MAX"}, i)
			n := 4 + i%4
			t := salesTable(i, n)
			p := fmt.Sprintf("~/Documents/%s-sales.csv", strings.ToLower(pick(cities, i/4)))
			cell := "B" + strconv.Itoa(n+2)
			f := fmt.Sprintf("=%s(B2:B%d)", fn, n+1)
			return taskSpec{param: fn + "@" + p,
				instruction: fmt.Sprintf("Open %s and, in cell %s, enter a formula that computes the %s of the Amount column (B2:B%d). Save the file.", p, cell, strings.ToLower(map[string]string{"AVERAGE": "average", "SUM": "sum", "MIN": "minimum", "MAX": "maximum"}[fn]), n+1),
				setup:       []SetupStep{createFile(p, tableCSV(t))},
				criteria: []judge.Criterion{
					critOpt("compare_number", &judge.Getter{Type: "sheet_cell", Path: p, Cell: cell}, rule(aggregate(fn, column(t, 1))), exactNum),
					critOpt("exact_match", &judge.Getter{Type: "sheet_cell_raw", Path: p, Cell: cell}, rule(f), formula)}}
		}},
		{id: "sheet-sort", app: "sheet", abilities: []string{"open", "select_column", "sort", "save"}, n: 10, gen: func(i int) taskSpec {
			t := salesTable(i+3, 4+i%3)
			col := i % 3
			desc := i%2 == 1
			p := fmt.Sprintf("~/Documents/%s-stock.csv", strings.ToLower(pick(cities, i+2)))
			s := (&sheet.Sheet{Cells: t}).Clone()
			s.SortRows(col, 1, desc)
			if tablesEqual(s.Cells, t) {
				// Already in that order: sort the other way.
				desc = !desc
				s = (&sheet.Sheet{Cells: t}).Clone()
				s.SortRows(col, 1, desc)
			}
			order := map[bool]string{false: "ascending", true: "descending"}[desc]
			return taskSpec{param: fmt.Sprintf("%s/%d/%v", p, col, desc),
				instruction: fmt.Sprintf("Sort the rows of %s by the %s column in %s order, keeping the header row on top, and save the file.", p, t[0][col], order),
				setup:       []SetupStep{createFile(p, tableCSV(t))},
				criteria:    []judge.Criterion{crit("compare_table", fileGetter("sheet_table", p), tableRule(s.Cells))}}
		}},
		{id: "sheet-enter", app: "sheet", abilities: []string{"type", "navigate_cells", "save_as"}, n: 10, gen: func(i int) taskSpec {
			rows := 2 + i%4
			t := [][]string{{"City", "Visitors", "Rating"}}
			if i%2 == 1 {
				t[0] = t[0][:2]
			}
			for k := 0; k < rows; k++ {
				r := []string{pick(cities, i+k), strconv.Itoa(100 + (i*13+k*29)%900), strconv.Itoa(1 + (i+k)%5)}
				t = append(t, r[:len(t[0])])
			}
			p := fmt.Sprintf("~/Documents/trip-%d.csv", i+1)
			var lines []string
			for _, r := range t {
				lines = append(lines, strings.Join(r, " | "))
			}
			return taskSpec{param: p,
				instruction: fmt.Sprintf("Create a new sheet with the following table (first row is the header, starting at A1) and save it as %s:\n%s", p, strings.Join(lines, "\n")),
				criteria:    []judge.Criterion{crit("compare_table", fileGetter("sheet_table", p), tableRule(t))}}
		}},
		{id: "sheet-edit", app: "sheet", abilities: []string{"open", "select_cell", "type", "save"}, n: 10, gen: func(i int) taskSpec {
			t := salesTable(i+5, 5)
			row := 1 + i%5
			col := 1 + i%2
			val := strconv.Itoa(200 + i*7)
			p := fmt.Sprintf("~/Desktop/%s-orders.csv", strings.ToLower(pick(cities, i+4)))
			cell := sheet.RefName(row, col)
			return taskSpec{param: fmt.Sprintf("%s/%s", p, cell),
				instruction: fmt.Sprintf("In %s, change the %s of %s to %s and save the file.", p, t[0][col], t[row][0], val),
				setup:       []SetupStep{createFile(p, tableCSV(t))},
				criteria:    []judge.Criterion{critOpt("compare_number", &judge.Getter{Type: "sheet_cell", Path: p, Cell: cell}, rule(float64(200+i*7)), exactNum)}}
		}},
		{id: "sheet-totals", app: "sheet", abilities: []string{"open", "formula", "type", "multi_step", "save"}, n: 6, gen: func(i int) taskSpec {
			n := 3 + i%3
			t := salesTable(i+7, n)
			p := fmt.Sprintf("~/Documents/%s-budget.csv", strings.ToLower(pick(cities, i+6)))
			r := strconv.Itoa(n + 2)
			return taskSpec{param: p,
				instruction: fmt.Sprintf("Open %s and add a totals row below the data: put the word Total in A%s and SUM formulas for the Amount and Units columns in B%s and C%s. Save the file.", p, r, r, r),
				setup:       []SetupStep{createFile(p, tableCSV(t))},
				criteria: []judge.Criterion{
					crit("exact_match", &judge.Getter{Type: "sheet_cell", Path: p, Cell: "A" + r}, rule("Total")),
					critOpt("exact_match", &judge.Getter{Type: "sheet_cell_raw", Path: p, Cell: "B" + r}, rule(fmt.Sprintf("=SUM(B2:B%d)", n+1)), formula),
					critOpt("exact_match", &judge.Getter{Type: "sheet_cell_raw", Path: p, Cell: "C" + r}, rule(fmt.Sprintf("=SUM(C2:C%d)", n+1)), formula),
					critOpt("compare_number", &judge.Getter{Type: "sheet_cell", Path: p, Cell: "B" + r}, rule(aggregate("SUM", column(t, 1))), exactNum)}}
		}},
		{id: "sheet-infeasible", app: "sheet", abilities: []string{"infeasible"}, n: 3, gen: func(i int) taskSpec {
			p := "~/Documents/chart-data.csv"
			asks := []string{"Insert a bar chart of the Amount column into " + p + ".", "Protect " + p + " with a password in Sheet.",
				"In " + p + ", apply conditional formatting that colours amounts above 50 red."}
			return taskSpec{param: asks[i], instruction: asks[i], setup: []SetupStep{createFile(p, tableCSV(salesTable(i, 3)))}, infeasible: true}
		}},
	}
}
