package notebook_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/query/notebook/notebooktest"
)

// TestTypedValuesRender: a report shows DuckDB's text of typed values
// (exact decimals, dates, intervals), not Go's rendering of them.
func TestTypedValuesRender(t *testing.T) {
	l, m := notebooktest.Lake(t)
	src := "# Typed\n\n```sql\nSELECT 0.50::DECIMAL(4,2) AS x, DATE '2024-02-29' AS d, TIMESTAMPTZ '2024-01-02 03:04:05+02' AS ts,\n" +
		"  INTERVAL '1 day 02:00:00' AS iv, 12345678901234567890123::HUGEINT AS h, [1.5::DECIMAL(3,1)] AS l\n```\n"
	r := runFile(t, l, m, "typed.md", []byte(src))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var html bytes.Buffer
	if err := notebook.WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">0.50<", ">2024-02-29<", ">2024-01-02 01:04:05+00<", ">1 day 02:00:00<", ">12345678901234567890123<", ">[1.5]<"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("the report lacks %s", want)
		}
	}
}
