package cli

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestSimdeskPool(t *testing.T) {
	t.Setenv("CUALAKE_LAKE", filepath.Join(t.TempDir(), "lake"))
	if out, err := run(t, "simdesk", "pool"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	out, err := run(t, "query", "--format", "csv", `select count(*), count(distinct domain), count(*) filter (where split = 'heldout'),
		min(difficulty), max(difficulty) from tasks`)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(strings.TrimSpace(strings.Split(out, "\n")[1]), ",")
	n, _ := strconv.Atoi(f[0])
	apps, _ := strconv.Atoi(f[1])
	held, _ := strconv.Atoi(f[2])
	lo, _ := strconv.Atoi(f[3])
	hi, _ := strconv.Atoi(f[4])
	if n < 200 || apps < 5 || held == 0 || held > n/2 || lo > 2 || hi < 20 {
		t.Fatalf("pool: %s", out)
	}
	// Idempotent: committing the same pool again changes nothing.
	before, _ := run(t, "lake", "log", "--json")
	run(t, "simdesk", "pool")
	after, _ := run(t, "lake", "log", "--json")
	if before != after {
		t.Fatal("committing the same pool twice made a new snapshot")
	}
}
