package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const base = "iterations: 2\nlimit_tasks: 4\nsynthesize: {count: 5}\n"

func TestResolveSharesPrefixes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.yaml", base)
	p, err := Load(write(t, dir, "e.yaml", `name: roles
base: base.yaml
set: {train.steps: 3}
seeds: [1, 2]
variants:
  - {name: step, set: {train.advantage: stepo, train.lr: 0.0003}}
  - {name: window}
  - {name: no-judger, set: {synthesize.without: [judger]}}
  - {name: verifier, set: {rollout.reward: verifier, sample.sampler: dtac}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Arms) != 8 {
		t.Fatalf("%d arms, want 4 variants x 2 seeds", len(p.Arms))
	}
	// step (STEPO advantages at another rate), window (the base) and
	// verifier change only the iterations: one prefix per seed; removing a
	// VeriGen role changes synthesis: its own prefix.
	if len(p.Prefixes) != 4 {
		t.Fatalf("%d prefixes, want 2 groups x 2 seeds", len(p.Prefixes))
	}
	by := map[string]*Arm{}
	for _, a := range p.Arms {
		by[a.Branch] = a
		if a.Config.Train.Steps != 3 || a.Config.Iterations != 2 {
			t.Fatalf("%s: set or base not applied: %+v", a.Branch, a.Config.Train)
		}
	}
	step, win, nj, ver := by["exp/roles/step/s1"], by["exp/roles/window/s1"], by["exp/roles/no-judger/s1"], by["exp/roles/verifier/s1"]
	if step == nil || win == nil || nj == nil || ver == nil {
		t.Fatalf("branches: %v", by)
	}
	if step.Prefix != win.Prefix || win.Prefix != ver.Prefix || nj.Prefix == win.Prefix {
		t.Fatal("prefix groups wrong")
	}
	if by["exp/roles/window/s2"].Prefix == win.Prefix {
		t.Fatal("two seeds share a prefix")
	}
	if step.Config.Train.Advantage != "stepo" || step.Config.Train.LR != 0.0003 || win.Config.Segment.Mode != "window" ||
		ver.Config.Rollout.Reward != "verifier" || ver.Config.Sample.Sampler != "dtac" || strings.Join(nj.Config.Synthesize.Without, ",") != "judger" {
		t.Fatalf("overrides not applied: %+v / %+v", step.Config.Train, nj.Config.Synthesize)
	}
	if !strings.HasPrefix(win.Prefix.Branch, "exp/roles/_prefix/p") || !strings.HasSuffix(win.Prefix.Branch, "/s1") ||
		strings.TrimSuffix(win.Prefix.Branch, "/s1") != strings.TrimSuffix(by["exp/roles/window/s2"].Prefix.Branch, "/s2") {
		t.Fatalf("prefix branch names: %s, %s", win.Prefix.Branch, by["exp/roles/window/s2"].Prefix.Branch)
	}
	if last := win.Prefix.Steps[len(win.Prefix.Steps)-1].Key; last != PrefixEnd {
		t.Fatalf("prefix ends at %s", last)
	}
	if first := suffixSteps(win.Config)[0].Key; first != "it01-sample" {
		t.Fatalf("iterations start at %s", first)
	}
	// The causal policy (the default) warm-starts on the segments and acts
	// in their context, so the segment mode is part of its prefix.
	c, err := Load(write(t, dir, "c.yaml", `name: modes
base: base.yaml
seeds: [1]
variants:
  - {name: step, set: {segment.mode: step}}
  - {name: window}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Arms) != 2 || c.Arms[0].Config.Policy != "causal" || c.Arms[0].Prefix == c.Arms[1].Prefix || len(c.Prefixes) != 2 {
		t.Fatalf("causal step and window must have their own prefixes: %d arms, %d prefixes", len(c.Arms), len(c.Prefixes))
	}
}

// Bad input is an error before anything runs, naming the key or variant.
func TestResolveRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.yaml", base)
	write(t, dir, "bad-base.yaml", "rollout: {n: 1}\n")
	for _, c := range []struct{ name, text, want string }{
		{"unknown key", "name: e\nbase: base.yaml\nseeds: [1]\nvariants: [{name: a, set: {segment.mdoe: step}}]\n", `variant a: segment.mdoe: unknown config key (no "mdoe" in segment)`},
		{"unknown section", "name: e\nseeds: [1]\nvariants: [{name: a, set: {trainer.lr: 1}}]\n", `variant a: trainer.lr: unknown config key`},
		{"leaf as section", "name: e\nseeds: [1]\nvariants: [{name: a, set: {seed.x: 1}}]\n", `seed.x: unknown config key (seed is not a section)`},
		{"unknown key in set", "name: e\nseeds: [1]\nset: {iteratons: 1}\nvariants: [{name: a}]\n", `set: iteratons: unknown config key`},
		{"bad value", "name: e\nseeds: [1]\nvariants: [{name: a, set: {sample.sampler: lucky}}]\n", `variant a: overrides sample.sampler: sample.sampler is "lucky"`},
		{"removed policy", "name: e\nseeds: [1]\nvariants: [{name: a, set: {policy: encdec}}]\n", `variant a: overrides policy: policy: encdec: the encoder-decoder policy was removed (last present in commit 7878f89)`},
		{"wrong type", "name: e\nseeds: [1]\nvariants: [{name: a, set: {segment.k: many}}]\n", `variant a: segment.k: want an integer, got "many"`},
		{"unsafe variant", "name: e\nseeds: [1]\nvariants: [{name: a/b}]\n", `variant "a/b": not a safe branch name`},
		{"unsafe variant 2", "name: e\nseeds: [1]\nvariants: [{name: ../x}]\n", `variant "../x": not a safe branch name`},
		{"reserved variant", "name: e\nseeds: [1]\nvariants: [{name: _prefix}]\n", `variant "_prefix": not a safe branch name`},
		{"duplicate variant", "name: e\nseeds: [1]\nvariants: [{name: a}, {name: a}]\n", `variant "a" is listed twice`},
		{"unsafe experiment", "name: E x\nseeds: [1]\nvariants: [{name: a}]\n", `experiment "E x": not a safe branch name`},
		{"invalid base", "name: e\nbase: bad-base.yaml\nseeds: [1]\nvariants: [{name: a}]\n", `base config: `},
		{"missing base", "name: e\nbase: nope.yaml\nseeds: [1]\nvariants: [{name: a}]\n", `nope.yaml`},
		{"no seeds", "name: e\nvariants: [{name: a}]\n", `no seeds`},
		{"duplicate seed", "name: e\nseeds: [1, 1]\nvariants: [{name: a}]\n", `seed 1`},
		{"fractional seed", "name: e\nseeds: [1, 2.5]\nvariants: [{name: a}]\n", `seeds[1] is 2.5, want an integer`},
		{"no variants", "name: e\nseeds: [1]\n", `no variants`},
		{"unknown spec key", "name: e\nseeds: [1]\nvariant: [{name: a}]\n", `variant`},
		{"both section and key", "name: e\nseeds: [1]\nvariants: [{name: a, set: {segment: {mode: step}, segment.k: 2}}]\n", `segment.k: also set as part of segment`},
	} {
		_, err := Load(write(t, dir, "e.yaml", c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// Seeds subset, dispatch order and the prefix names that let two
// experiments in one lake share a prefix.
func TestOnlySeedsDispatchOrderAndSharedPrefixNames(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.yaml", base)
	p, err := Load(write(t, dir, "a.yaml", `name: a
base: base.yaml
seeds: [1, 2, 3]
variants:
  - {name: x, set: {sample.sampler: uniform}}
  - {name: y, set: {sample.sampler: dapo}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, a := range DispatchOrder(p) {
		order = append(order, a.Branch)
	}
	if got := strings.Join(order, " "); got != "exp/a/x/s1 exp/a/y/s1 exp/a/x/s2 exp/a/y/s2 exp/a/x/s3 exp/a/y/s3" {
		t.Fatalf("dispatch order %s: want seed by seed, variants in the file's order", got)
	}
	q, err := p.OnlySeeds([]int64{3, 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Arms) != 4 || len(q.Prefixes) != 2 || len(q.Spec.Seeds) != 2 || q.Spec.Seeds[0] != 1 || q.Spec.Seeds[1] != 3 || len(p.Arms) != 6 {
		t.Fatalf("OnlySeeds(3, 1): %d arms, %d prefixes, seeds %v (the plan itself: %d arms)", len(q.Arms), len(q.Prefixes), q.Spec.Seeds, len(p.Arms))
	}
	for _, a := range q.Arms {
		if a.Seed == 2 || a.Prefix.Seed != a.Seed {
			t.Fatalf("OnlySeeds kept %s (prefix %s)", a.Branch, a.Prefix.Branch)
		}
	}
	if _, err := p.OnlySeeds([]int64{4}); err == nil || !strings.Contains(err.Error(), "seed 4 is not one of the file's seeds") {
		t.Fatalf("OnlySeeds(4): %v", err)
	}
	// Another experiment with the same prefix config: equal tails after
	// prefixDir (what adoptPrefix matches), the same run id; another seed
	// or synthesis config: another tail.
	b, err := Load(write(t, dir, "b.yaml", `name: b
base: base.yaml
seeds: [1]
variants:
  - {name: z, set: {segment.k: 3, segment.delta: 3}}
  - {name: w, set: {sample.sampler: curriculum}}
`))
	if err != nil {
		t.Fatal(err)
	}
	tail := func(pre *Prefix) string { return pre.Branch[strings.Index(pre.Branch, prefixDir):] }
	var same *Prefix
	for _, pre := range b.Prefixes {
		if tail(pre) == tail(p.Arms[0].Prefix) {
			same = pre
		}
	}
	if same == nil || same.RunID != p.Arms[0].Prefix.RunID || len(b.Prefixes) != 2 {
		t.Fatalf("b's prefixes %v: want one equal to a's s1 prefix %s (and K = 3's own)", b.Prefixes, p.Arms[0].Prefix.Branch)
	}
	if tail(p.Arms[0].Prefix) == tail(DispatchOrder(p)[2].Prefix) {
		t.Fatal("seeds 1 and 2 have equal prefix tails")
	}
}

// A value of the wrong type is named by the file, the variant (or the
// spec's set) and the key, not by a line of the merged config, which is in
// no file.
func TestResolveNamesTheKeyOfAWrongType(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, set, want string }{
		{"quoted string", `variants: [{name: a, set: {segment.k: "five"}}]`, `variant a: segment.k: want an integer, got "five"`},
		{"in a section", `variants: [{name: a, set: {segment: {mode: step, k: five}}}]`, `variant a: segment.k: want an integer, got "five"`},
		{"unknown key in a section", `variants: [{name: a, set: {segment: {kk: 3}}}]`, `variant a: segment.kk: unknown config key (no "kk" in segment)`},
		{"string for true or false", `variants: [{name: a, set: {async: sometimes}}]`, `variant a: async: want true or false, got "sometimes"`},
		{"string for a number", "set: {train.lr: fast}\nvariants: [{name: a}]", `set: train.lr: want a number, got "fast"`},
		{"section for a list", `variants: [{name: a, set: {synthesize.without: {judger: 1}}}]`, `variant a: synthesize.without: want a list of strings, got {judger: 1}`},
		{"list for a string", `variants: [{name: a, set: {segment.mode: [step]}}]`, `variant a: segment.mode: want a string, got [step]`},
		{"fraction for an integer", `variants: [{name: a, set: {segment.k: 2.5}}]`, `variant a: segment.k: want an integer, got 2.5`},
		{"fraction in a section", `variants: [{name: a, set: {train: {steps: 7.5}}}]`, `variant a: train.steps: want an integer, got 7.5`},
		{"fraction with an exponent", `variants: [{name: a, set: {segment.k: 15e-1}}]`, `variant a: segment.k: want an integer`},
	} {
		p := write(t, dir, "tiny.yaml", "name: e\nseeds: [1]\n"+c.set+"\n")
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "experiment "+p+": ") {
			t.Errorf("%s: error %v, want it to start with the file and contain %q", c.name, err, c.want)
		} else if strings.Contains(err.Error(), "[") && !strings.Contains(c.want, "[") {
			t.Errorf("%s: error %v has a position", c.name, err)
		}
	}
	// Values of the right type still apply, a section's keys included.
	p, err := Load(write(t, dir, "ok.yaml", `name: e
seeds: [1]
variants: [{name: a, set: {segment: {mode: step, k: 3, delta: 2}, train.lr: 1, synthesize.without: [fixer]}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Arms[0].Config; c.Segment.Mode != "step" || c.Segment.K != 3 || c.Segment.Delta != 2 || c.Train.LR != 1 || c.Synthesize.Without[0] != "fixer" {
		t.Fatalf("overrides not applied: %+v %+v", c.Segment, c.Train)
	}
}

// A variant's override that Validate refuses stops the experiment at Load,
// naming the variant and the key: eval.split outside the task splits, and
// an explicit train.steps: 0 (which the train stage would read as "its
// default" and run 30 steps). Load opens no lake: the CLI test
// TestExperimentRefusesBadInputBeforeRunning checks none is created.
func TestResolveRefusesInvalidVariantValues(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.yaml", base)
	for _, c := range []struct{ set, want string }{
		{"{eval.split: bogus}", `variant b: overrides eval.split: eval.split is "bogus", want heldout or train`},
		{"{train.steps: 0}", `variant b: overrides train.steps: train.steps is 0, want >= 1`},
		{"{warmstart.lr: 0}", `variant b: overrides warmstart.lr: warmstart.lr is 0, want a finite number > 0`},
		{"{audits: [health, bogus]}", `variant b: overrides audits: audits holds "bogus"`},
		{"{segment.k: 0}", `variant b: overrides segment.k: segment.k is 0, want 1..1024`},
	} {
		p := write(t, dir, "e.yaml", "name: e\nbase: base.yaml\nseeds: [1]\nvariants: [{name: a}, {name: b, set: "+c.set+"}]\n")
		plan, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.set, err, c.want)
		}
		if plan != nil {
			t.Errorf("%s: a plan came back with the error", c.set)
		}
	}
}
