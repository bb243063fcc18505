// Package sheet is the spreadsheet model shared by the simulator's Sheet app
// and the judges: a grid of raw cell inputs, a small formula language
// (arithmetic, cell references, SUM/AVERAGE/MIN/MAX/COUNT/ROUND/ABS over
// ranges), CSV load and save, and row sorting.
package sheet

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Grid limits; they bound memory whatever a file or an agent types.
const (
	MaxRows = 200
	MaxCols = 26
)

// Sheet is a grid of raw inputs ("12", "Alice", "=SUM(B2:B4)"), row-major
// and 0-based; rows may be ragged and missing cells are empty.
type Sheet struct {
	Cells [][]string `json:"cells"`
}

// Clone returns an independent copy.
func (s *Sheet) Clone() *Sheet {
	c := &Sheet{Cells: make([][]string, len(s.Cells))}
	for i, r := range s.Cells {
		c.Cells[i] = append([]string(nil), r...)
	}
	return c
}

// Raw returns the raw input of a cell ("" when empty or out of range).
func (s *Sheet) Raw(row, col int) string {
	if row < 0 || col < 0 || row >= len(s.Cells) || col >= len(s.Cells[row]) {
		return ""
	}
	return s.Cells[row][col]
}

// Set stores a raw input; out-of-range cells are an error.
func (s *Sheet) Set(row, col int, raw string) error {
	if row < 0 || col < 0 || row >= MaxRows || col >= MaxCols {
		return fmt.Errorf("cell %s: out of range", RefName(row, col))
	}
	for len(s.Cells) <= row {
		s.Cells = append(s.Cells, nil)
	}
	for len(s.Cells[row]) <= col {
		s.Cells[row] = append(s.Cells[row], "")
	}
	s.Cells[row][col] = raw
	s.trim()
	return nil
}

// trim drops trailing empty cells and rows so equal content has one form.
func (s *Sheet) trim() {
	for i, r := range s.Cells {
		n := len(r)
		for n > 0 && r[n-1] == "" {
			n--
		}
		s.Cells[i] = r[:n]
	}
	n := len(s.Cells)
	for n > 0 && len(s.Cells[n-1]) == 0 {
		n--
	}
	s.Cells = s.Cells[:n]
}

// Rows returns the number of used rows.
func (s *Sheet) Rows() int { return len(s.Cells) }

// Cols returns the number of used columns.
func (s *Sheet) Cols() int {
	n := 0
	for _, r := range s.Cells {
		n = max(n, len(r))
	}
	return n
}

// ColName returns the letters of a 0-based column ("A".."Z").
func ColName(col int) string {
	if col < 0 || col >= MaxCols {
		return "?"
	}
	return string(rune('A' + col))
}

// RefName returns the A1 name of a 0-based cell.
func RefName(row, col int) string { return ColName(col) + strconv.Itoa(row+1) }

// ParseRef parses an A1 reference ("B10", "$b$10") into 0-based row and
// column.
func ParseRef(ref string) (row, col int, err error) {
	r := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(ref), "$", ""))
	if len(r) < 2 || r[0] < 'A' || r[0] > 'Z' {
		return 0, 0, fmt.Errorf("bad cell reference %q", ref)
	}
	n, err := strconv.Atoi(r[1:])
	if err != nil || n < 1 || n > MaxRows || strings.HasPrefix(r[1:], "+") {
		return 0, 0, fmt.Errorf("bad cell reference %q", ref)
	}
	return n - 1, int(r[0] - 'A'), nil
}

// ParseCSV reads a sheet saved as CSV.
func ParseCSV(text string) (*Sheet, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("parse csv: %w", err)
	}
	if len(recs) > MaxRows {
		return nil, fmt.Errorf("parse csv: %d rows exceed %d", len(recs), MaxRows)
	}
	s := &Sheet{}
	for i, rec := range recs {
		if len(rec) > MaxCols {
			return nil, fmt.Errorf("parse csv: row %d has %d columns, more than %d", i+1, len(rec), MaxCols)
		}
		s.Cells = append(s.Cells, rec)
	}
	s.trim()
	return s, nil
}

// CSV renders the sheet as CSV with "\n" line ends; rows are padded to the
// used width so every record has the same number of fields.
func (s *Sheet) CSV() string {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	cols := s.Cols()
	for _, r := range s.Cells {
		rec := make([]string, cols)
		copy(rec, r)
		_ = w.Write(rec) // writes to a bytes.Buffer cannot fail
	}
	w.Flush()
	return b.String()
}

// SortRows sorts rows from (0-based) through the last used row by column
// col; numbers sort before text and by value, empty cells last. The sort is
// stable, so equal keys keep their order.
func (s *Sheet) SortRows(col, from int, desc bool) {
	if from < 0 || from >= len(s.Cells) || col < 0 || col >= MaxCols {
		return
	}
	ev := s.Evaluator()
	type row struct {
		cells []string
		key   Value
	}
	rows := make([]row, 0, len(s.Cells)-from)
	for i := from; i < len(s.Cells); i++ {
		rows = append(rows, row{cells: s.Cells[i], key: ev.Value(i, col)})
	}
	sort.SliceStable(rows, func(i, j int) bool {
		c := Compare(rows[i].key, rows[j].key)
		if desc {
			// Empty cells stay last in both directions.
			if rows[i].key.Empty() != rows[j].key.Empty() {
				return rows[j].key.Empty()
			}
			return c > 0
		}
		return c < 0
	})
	for i, r := range rows {
		s.Cells[from+i] = r.cells
	}
}

// Table returns the evaluated values of the used area, one string per cell,
// trailing empty cells trimmed per row.
func (s *Sheet) Table() [][]string {
	ev := s.Evaluator()
	out := make([][]string, len(s.Cells))
	for i, r := range s.Cells {
		row := make([]string, len(r))
		for j := range r {
			row[j] = ev.Value(i, j).String()
		}
		out[i] = row
	}
	return out
}

// Value is an evaluated cell: a number, a text, an error ("#DIV/0!") or
// empty.
type Value struct {
	Num   float64
	Text  string
	IsNum bool
	Err   string
}

// Empty reports whether the value is an empty cell.
func (v Value) Empty() bool { return !v.IsNum && v.Text == "" && v.Err == "" }

// String renders a value the way the Sheet app shows it: integers without a
// decimal point, other numbers with at most 10 decimals.
func (v Value) String() string {
	switch {
	case v.Err != "":
		return v.Err
	case v.IsNum:
		return FormatNumber(v.Num)
	}
	return v.Text
}

// FormatNumber renders a number as the Sheet app shows it.
func FormatNumber(n float64) string {
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return "#NUM!"
	}
	r := math.Round(n*1e10) / 1e10
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// Compare orders values: numbers (by value) before text (case-insensitive)
// before errors before empty cells.
func Compare(a, b Value) int {
	rank := func(v Value) int {
		switch {
		case v.Empty():
			return 3
		case v.Err != "":
			return 2
		case v.IsNum:
			return 0
		}
		return 1
	}
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return ra - rb
	}
	switch ra {
	case 0:
		switch {
		case a.Num < b.Num:
			return -1
		case a.Num > b.Num:
			return 1
		}
		return 0
	case 1:
		return strings.Compare(strings.ToLower(a.Text), strings.ToLower(b.Text))
	}
	return strings.Compare(a.Err, b.Err)
}

// ParseNumber parses a plain numeric input ("12", "-3.5", "1e3", "1,234"
// is text). Leading and trailing spaces are allowed.
func ParseNumber(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	if t == "" || strings.ContainsAny(t, "xXpP_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
