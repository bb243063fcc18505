package progress

import (
	"bytes"
	"strings"
	"testing"
)

// TestBarEstimatesOnlyAfterOnePercent checks that a plain-line bar gives no
// time left while under 1% is done (the first unit carries the start-up and
// would extrapolate to hours) and gives one after.
func TestBarEstimatesOnlyAfterOnePercent(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "segment", 1000, false)
	b.Add(1) // the first Add draws at once
	first := buf.String()
	if !strings.HasPrefix(first, "segment: 1/1000 (") || strings.Contains(first, "left") {
		t.Fatalf("first line %q: want 1/1000 without an estimate", first)
	}
	b.Add(9)
	b.Done() // draws 10/1000, 1%
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "segment: 10/1000 (") || !strings.Contains(last, " left)") {
		t.Fatalf("last line %q: want 10/1000 with an estimate", last)
	}
}

// TestNilBarDoesNothing checks that a quiet bar is safe to use.
func TestNilBarDoesNothing(t *testing.T) {
	b := New(&bytes.Buffer{}, "x", 10, true)
	if b != nil {
		t.Fatal("quiet bar is not nil")
	}
	b.Add(1)
	b.SetTotal(3)
	b.Done()
}
