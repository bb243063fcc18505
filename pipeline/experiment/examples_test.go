package experiment

import (
	"path/filepath"
	"testing"

	"github.com/cualake/cualake/pipeline/loop"
)

// Every shipped experiment resolves; the sampler, advantage, reward and async
// ablations share one prefix per seed; the VeriGen one has a prefix per
// role configuration, and the segment-mode ones a prefix per mode.
func TestExamplesResolve(t *testing.T) {
	files, err := filepath.Glob("../../examples/experiments/*.yaml")
	if err != nil || len(files) < 6 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		p, err := Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		seeds := len(p.Spec.Seeds)
		want := map[string]int{"demo-seeds": seeds, "samplers": seeds, "samplers-quick": 1, "stepo": seeds, "reward-source": seeds, "async": seeds, "iterations": seeds, "rl-strength": seeds, "verigen-roles": 4 * seeds,
			// The segment mode shapes the warm start, so each mode has its own prefix.
			"vcs": 2 * seeds, "vcs-quick": 2, "k-sweep": 5 * seeds,
			// The initial pass differs: two prefixes, one warm start (a stem).
			"frontier-estimate": 2 * seeds,
			// The demonstrations differ: two warm starts on one pool, and
			// two initial passes of the partial one.
			"demo-coverage": 3 * seeds,
			// The partial warm start and its initial pass of 8, shared.
			"rl-budget": seeds}
		if n, ok := want[p.Spec.Name]; ok && len(p.Prefixes) != n {
			t.Errorf("%s: %d prefixes, want %d", p.Spec.Name, len(p.Prefixes), n)
		}
		// One stem per seed where prefixes part: after the warm start's
		// evaluation (frontier-estimate), after the oracle demonstrations
		// (the segment mode and K shape the warm start's segments), after
		// the pool (VeriGen roles shape synthesis).
		wantStem := map[string]string{"frontier-estimate": "it00-eval", "stems-check": "it00-eval", "vcs": "warm-demos", "k-sweep": "warm-demos", "verigen-roles": "pool"}
		if last, ok := wantStem[p.Spec.Name]; ok {
			if len(p.Stems) != seeds {
				t.Errorf("%s: %d stems, want one per seed", p.Spec.Name, len(p.Stems))
			}
			for _, st := range p.Stems {
				if got := st.Steps[len(st.Steps)-1].Key; got != last {
					t.Errorf("%s: stem ends at %s, want %s", p.Spec.Name, got, last)
				}
			}
		}
		// Nested stems: every variant shares the pool and synthesis; the
		// two of partial coverage share their warm start too.
		if p.Spec.Name == "demo-coverage" {
			ends := map[string]int{}
			for _, st := range p.Stems {
				ends[st.Steps[len(st.Steps)-1].Key]++
			}
			if len(ends) != 2 || ends["synthesize"] != seeds || ends["it00-eval"] != seeds {
				t.Errorf("demo-coverage: stems end at %v, want synthesize and it00-eval once per seed", ends)
			}
		}
	}
}

// TestDemoIsTheCheckedArm: `make demo`'s config (examples/demo.yaml over
// the defaults) names the run of cover-template.yaml's template arm, so
// the demo's numbers in the README are that arm's seeds, computed by the
// same steps; without warmstart.cover_by (the seed's plain pick, before
// cualake/0.1.13) it names the run of split-check.yaml's demo arm,
// dropout.yaml's p0.1 and the other experiments' control arms;
// dropout.yaml's p0 arm is that config without dropout, another run; the
// arms of rft-augment.yaml, rounds-dropout.yaml and rft-restart.yaml are
// that config and the keys they are about; the demo arms of rft-lr.yaml,
// rft-balance.yaml, rft-grpo.yaml and rft-grpo1-check.yaml are the demo's
// run, and their other arms differ in rft.lr, rft.balance, or one or two
// GRPO iterations (and their rate) alone.
func TestDemoIsTheCheckedArm(t *testing.T) {
	demo, err := loop.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	arm := func(file, variant string) loop.Config {
		t.Helper()
		p, err := Load("../../examples/experiments/" + file)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range p.Arms {
			if a.Variant == variant {
				c := a.Config
				c.Seed = demo.Seed
				return c
			}
		}
		t.Fatalf("%s has no arm %s", file, variant)
		return loop.Config{}
	}
	if c := arm("cover-template.yaml", "template"); loop.RunID(c) != loop.RunID(demo) || demo.Warmstart.CoverBy != "template" {
		t.Fatalf("examples/demo.yaml (cover_by %q) is not cover-template.yaml's arm template: run %s against %s", demo.Warmstart.CoverBy, loop.RunID(demo), loop.RunID(c))
	}
	if c := arm("rft-lr.yaml", "demo"); loop.RunID(c) != loop.RunID(demo) {
		t.Fatalf("examples/demo.yaml is not rft-lr.yaml's arm demo: run %s against %s", loop.RunID(demo), loop.RunID(c))
	}
	for variant, lr := range map[string]float64{"lr003": 0.003, "lr03": 0.03} {
		c := arm("rft-lr.yaml", variant)
		if c.RFT.LR != lr || c.RFT.LR == demo.RFT.LR {
			t.Fatalf("rft-lr.yaml's %s: rft.lr %v, want %v (the demo's is %v)", variant, c.RFT.LR, lr, demo.RFT.LR)
		}
		if c.RFT.LR = demo.RFT.LR; loop.RunID(c) != loop.RunID(demo) {
			t.Fatalf("rft-lr.yaml's %s is more than the demo's config and rft.lr", variant)
		}
	}
	if c := arm("rft-balance.yaml", "demo"); loop.RunID(c) != loop.RunID(demo) {
		t.Fatalf("examples/demo.yaml is not rft-balance.yaml's arm demo: run %s against %s", loop.RunID(demo), loop.RunID(c))
	}
	if c := arm("rft-balance.yaml", "balance"); c.RFT.Balance != "actions" || demo.RFT.Balance != "none" {
		t.Fatalf("rft-balance.yaml's balance: rft.balance %q (the demo's %q)", c.RFT.Balance, demo.RFT.Balance)
	} else if c.RFT.Balance = demo.RFT.Balance; loop.RunID(c) != loop.RunID(demo) {
		t.Fatal("rft-balance.yaml's balance is more than the demo's config and rft.balance")
	}
	for _, file := range []string{"rft-grpo.yaml", "rft-grpo1-check.yaml"} {
		if c := arm(file, "demo"); loop.RunID(c) != loop.RunID(demo) {
			t.Fatalf("examples/demo.yaml is not %s's arm demo: run %s against %s", file, loop.RunID(demo), loop.RunID(c))
		}
	}
	if c := arm("rft-grpo1-check.yaml", "grpo1-lr3e-4"); c.Iterations != demo.RFT.Iterations+1 || c.Train.LR != 3e-4 {
		t.Fatalf("rft-grpo1-check.yaml's grpo1-lr3e-4: %d iterations at GRPO lr %v, want one after the demo's %d rounds at 3e-4", c.Iterations, c.Train.LR, demo.RFT.Iterations)
	} else if c.Iterations, c.Train.LR = demo.Iterations, demo.Train.LR; loop.RunID(c) != loop.RunID(demo) {
		t.Fatal("rft-grpo1-check.yaml's grpo1-lr3e-4 is more than the demo's config, one GRPO iteration and train.lr")
	}
	for variant, lr := range map[string]float64{"grpo2": demo.Train.LR, "grpo2-lr3e-4": 3e-4} {
		c := arm("rft-grpo.yaml", variant)
		if c.Iterations != demo.RFT.Iterations+2 || c.RFT.Iterations != demo.RFT.Iterations || c.Train.LR != lr {
			t.Fatalf("rft-grpo.yaml's %s: %d iterations, %d of them rounds, GRPO lr %v; want two GRPO iterations after the demo's %d rounds at %v",
				variant, c.Iterations, c.RFT.Iterations, c.Train.LR, demo.RFT.Iterations, lr)
		}
		if c.Iterations, c.Train.LR = demo.Iterations, demo.Train.LR; loop.RunID(c) != loop.RunID(demo) {
			t.Fatalf("rft-grpo.yaml's %s is more than the demo's config, two GRPO iterations and train.lr", variant)
		}
	}
	plain := demo
	plain.Warmstart.CoverBy = "family"
	for _, a := range []struct{ file, variant string }{{"split-check.yaml", "demo"}, {"dropout.yaml", "p0.1"}, {"rft-augment.yaml", "demo"}, {"rft-restart.yaml", "continue"}, {"cover-template.yaml", "family"}} {
		if c := arm(a.file, a.variant); loop.RunID(c) != loop.RunID(plain) {
			t.Fatalf("examples/demo.yaml with the plain pick is not %s's arm %s: run %s against %s", a.file, a.variant, loop.RunID(plain), loop.RunID(c))
		}
	}
	if c := arm("dropout.yaml", "p0"); loop.RunID(c) == loop.RunID(plain) || c.Warmstart.Dropout != 0 || c.RFT.Dropout != 0 {
		t.Fatalf("dropout.yaml's p0 arm is the demo's run or has dropout: %+v %+v", c.Warmstart, c.RFT)
	}
	// The measured arms differ from the demo by the one key they name.
	aug := arm("rft-augment.yaml", "a30")
	if aug.RFT.Augment != 30 {
		t.Fatalf("rft-augment.yaml's a30: rft.augment %d", aug.RFT.Augment)
	}
	aug.RFT.Augment = 0
	r5 := arm("rounds-dropout.yaml", "r5")
	if r5.Iterations != 5 || r5.RFT.Iterations != 5 {
		t.Fatalf("rounds-dropout.yaml's r5: %d iterations, %d rounds", r5.Iterations, r5.RFT.Iterations)
	}
	r5.Iterations, r5.RFT.Iterations = 3, 3
	restart := arm("rft-restart.yaml", "restart")
	if !restart.RFT.Restart || restart.RFT.Steps != 400 {
		t.Fatalf("rft-restart.yaml's restart: restart %v, %d steps", restart.RFT.Restart, restart.RFT.Steps)
	}
	restart.RFT.Restart, restart.RFT.Steps = false, demo.RFT.Steps
	for name, c := range map[string]loop.Config{"rft-augment.yaml a30": aug, "rounds-dropout.yaml r5": r5, "rft-restart.yaml restart": restart} {
		if loop.RunID(c) != loop.RunID(plain) {
			t.Fatalf("%s is more than the demo's config and its key", name)
		}
	}
}
