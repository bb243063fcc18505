package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestInterspersedFlags: flags after a positional argument are read as
// flags (the documented `lake branch create NAME --from SNAPSHOT` works),
// values go with their flag, and "--", unknown dashes and SQL comments stay
// positional.
func TestInterspersedFlags(t *testing.T) {
	app := App()
	cases := []struct{ in, want []string }{
		{[]string{"cualake", "lake", "branch", "create", "exp/a", "--from", "3f2a", "--lake", "L"},
			[]string{"cualake", "lake", "branch", "create", "--from", "3f2a", "--lake", "L", "exp/a"}},
		{[]string{"cualake", "query", "select 1", "--json", "--lake=L"},
			[]string{"cualake", "query", "--json", "--lake=L", "select 1"}},
		{[]string{"cualake", "query", "--lake", "L", "-- a comment\nselect 1"},
			[]string{"cualake", "query", "--lake", "L", "-- a comment\nselect 1"}},
		{[]string{"cualake", "query", "x", "--", "--json"},
			[]string{"cualake", "query", "x", "--", "--json"}},
		{[]string{"cualake", "query", "x", "--nosuchflag"},
			[]string{"cualake", "query", "x", "--nosuchflag"}},
	}
	for _, c := range cases {
		if got := Interspersed(app, c.in); !slices.Equal(got, c.want) {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	// a word shaped like an unknown flag after the arguments is refused, not
	// run as part of them; after "--", or not shaped like a flag, it is kept
	strays := map[string][]string{
		"--fromat":      {"cualake", "query", "select 1", "--fromat", "csv"},
		"--nosuchflag":  {"cualake", "query", "x", "--nosuchflag"},
		"--max-turnz=3": {"cualake", "rollout", "--lake", "L", "x", "--max-turnz=3"},
		"":              {"cualake", "query", "x", "--", "--json"},
	}
	for _, args := range [][]string{
		{"cualake", "query", "--lake", "L", "-- a comment\nselect 1", "-1", "--"},
		{"cualake", "--help"}, {"cualake", "--version"}, {"cualake", "query", "--help"},
		{"cualake", "query", "select 1", "--help"}, {"cualake", "lake", "branch", "create", "x", "--help"},
		{"cualake", "rollout", "--generate-bash-completion"},
		// flags of the command above come before the subcommand
		{"cualake", "audit", "--at", "X", "overlap", "--shard", "1/4"},
		// an unknown flag before any argument is urfave/cli's error, not ours
		{"cualake", "rollout", "--polcy", "oracle"},
		// a flag's value may look like a flag
		{"cualake", "query", "x", "--out", "--weird-name"},
	} {
		if got := StrayFlag(app, args); got != "" {
			t.Errorf("%q: stray %q, want none", args, got)
		}
	}
	// the audit stage binary: its first argument is the KIND, whose flags
	// follow it
	if got := StrayFlag(StageApp("audit"), []string{"audit", "overlap", "--shard", "1/4"}); got != "" {
		t.Errorf("audit stage binary: stray %q, want none", got)
	}
	for want, args := range strays {
		if got := StrayFlag(app, args); got != want {
			t.Errorf("%q: stray %q, want %q", args, got, want)
		}
	}
	for _, args := range [][]string{{"--help"}, {"query", "--help"}, {"rollout", "--help"}} {
		if out, err := run(t, args...); err != nil || !strings.Contains(out, "USAGE") {
			t.Errorf("%q: %v\n%s", args, err, out)
		}
	}
	if out, err := run(t, "query", "--lake", t.TempDir(), "select 1", "--fromat", "csv"); err == nil || !strings.Contains(err.Error(), "unknown flag --fromat") {
		t.Fatalf("a mistyped flag after the SQL: %v\n%s", err, out)
	}
	base := commitFixture(t, initLake(t), 2)
	if out, err := run(t, "lake", "branch", "create", "exp/a", "--from", base, "--json"); err != nil {
		t.Fatalf("branch create NAME --lake: %v\n%s", err, out)
	}
	out, err := run(t, "lake", "branch", "list")
	if err != nil || !strings.Contains(out, "exp/a") {
		t.Fatalf("branch list: %v\n%s", err, out)
	}
}
