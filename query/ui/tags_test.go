package ui

import "testing"

// Run-progress tags fold away, on main and on any branch; other tags stay.
func TestSortedTagsFoldsRunTags(t *testing.T) {
	plain, runs := sortedTags(map[string]string{"v1": "a", "run/abc/pool": "b", "exp/x/step/s1/run/abc/it01-train": "c"})
	if len(plain) != 1 || plain[0][0] != "v1" || len(runs) != 2 {
		t.Fatalf("plain %v, runs %v", plain, runs)
	}
}
