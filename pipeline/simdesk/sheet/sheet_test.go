package sheet

import (
	"strings"
	"testing"
)

func grid(rows ...string) *Sheet {
	s, err := ParseCSV(strings.Join(rows, "\n") + "\n")
	if err != nil {
		panic(err)
	}
	return s
}

func TestFormulas(t *testing.T) {
	s := grid("Item,Amount,Units", "a,10,2", "b,20,", "c,x,4", ",5.5,1")
	cases := map[string]string{
		"=SUM(B2:B5)":        "35.5",
		"=sum(b2:b3)+B5*2":   "41",
		"=AVERAGE(B2:B3)":    "15",
		"=AVERAGE(C2:C5)":    "2.3333333333",
		"=MIN(B2:B5)":        "5.5",
		"=MAX(B2:C5)":        "20",
		"=COUNT(B1:B5)":      "3",
		"=ROUND(B5/3, 2)":    "1.83",
		"=ABS(-B2)":          "10",
		"=(1+2)*3-4/2":       "7",
		"=-B2+--3":           "-7",
		"=B4+1":              "#VALUE!",
		"=1/0":               "#DIV/0!",
		"=NOPE(B2)":          "#NAME?",
		"=B2:B3":             "#VALUE!",
		"=SUM(B2:B3":         "#ERROR!",
		"=$B$2*2":            "20",
		"=\"text\"":          "text",
		"=C3+1":              "1",
		"=SUM(B2, 1, \"2\")": "13",
		"=AVERAGE(A1:A5)":    "#DIV/0!",
	}
	for f, want := range cases {
		if err := s.Set(6, 0, f); err != nil {
			t.Fatal(err)
		}
		if got := s.Evaluator().Value(6, 0).String(); got != want {
			t.Errorf("%s = %s, want %s", f, got, want)
		}
	}
}

func TestCycles(t *testing.T) {
	s := grid("=A2", "=A1", "=A3")
	for r := 0; r < 3; r++ {
		if got := s.Evaluator().Value(r, 0).String(); got != "#CYCLE!" {
			t.Errorf("A%d = %s", r+1, got)
		}
	}
}

func TestCSVRoundTripAndSort(t *testing.T) {
	s := grid("Name,Score", "b,3", "\"a, quoted\",10", "c,", "d,=2*10")
	again, err := ParseCSV(s.CSV())
	if err != nil || again.CSV() != s.CSV() {
		t.Fatalf("round trip: %v %q", err, s.CSV())
	}
	s.SortRows(1, 1, false)
	if got := s.Table(); got[1][0] != "b" || got[2][0] != "a, quoted" || got[4][0] != "c" {
		t.Fatalf("ascending: %v", got)
	}
	s.SortRows(1, 1, true)
	if got := s.Table(); got[1][0] != "d" || got[2][0] != "a, quoted" || got[4][0] != "c" {
		t.Fatalf("descending (empty last): %v", got)
	}
	if _, err := ParseCSV(strings.Repeat("a,", 30) + "\n"); err == nil {
		t.Fatal("too many columns accepted")
	}
	if err := s.Set(MaxRows, 0, "x"); err == nil {
		t.Fatal("row out of range accepted")
	}
}

func TestRefs(t *testing.T) {
	for ref, want := range map[string][2]int{"A1": {0, 0}, "b10": {9, 1}, "$Z$200": {199, 25}} {
		r, c, err := ParseRef(ref)
		if err != nil || r != want[0] || c != want[1] {
			t.Errorf("%s -> %d,%d %v", ref, r, c, err)
		}
		if RefName(r, c) != strings.ToUpper(strings.ReplaceAll(ref, "$", "")) {
			t.Errorf("RefName(%d,%d) = %s", r, c, RefName(r, c))
		}
	}
	for _, bad := range []string{"", "A0", "A201", "AA1", "1A", "A+1", "A-1"} {
		if _, _, err := ParseRef(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
