package loop

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/sample"
)

func TestLoadStrictAndValidate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte("iterations: 2\nsample: {sampler: dtac, batch: 8}\n"), 0o644)
	c, err := Load(p)
	if err != nil || c.Iterations != 2 || c.Sample.Sampler != "dtac" || c.Sample.Batch != 8 || c.Rollout.N != 8 {
		t.Fatalf("load over defaults: %+v %v", c, err)
	}
	os.WriteFile(p, []byte("iteratoins: 2\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "iteratoins") {
		t.Fatalf("a misspelt key must be an error naming it: %v", err)
	}
	os.WriteFile(p, []byte("rollout: {n: 1}\nsample: {sampler: lucky}\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "rollout.n") || !strings.Contains(err.Error(), "lucky") {
		t.Fatalf("invalid values must be named: %v", err)
	}
	// A fraction for an integer field is refused by key, not truncated;
	// an integral number written as one (1e3, 2.0) is that integer.
	for in, want := range map[string]string{
		"iterations: 1.5\n":             "iterations is 1.5, want an integer",
		"segment: {k: 5, delta: 0.5}\n": "segment.delta is 0.5, want an integer",
		"iterations: 15e-1\n":           "iterations is 15e-1, want an integer",
		"iterations: \"2.5\"\n":         "iterations is 2.5, want an integer",
		"sample: {batch: 2e-1}\n":       "sample.batch is 2e-1, want an integer",
		"seed: 1e19\n":                  "seed is 1e19, want an integer",
		"seed: 9223372036854775808\n":   "seed",
	} {
		os.WriteFile(p, []byte(in), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "config "+p+": ") {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
	os.WriteFile(p, []byte("iterations: 2.0\nsynthesize: {count: 1e1}\nworkers: 0x10\nseed: -9223372036854775808\n"), 0o644)
	if c, err := Load(p); err != nil || c.Iterations != 2 || c.Synthesize.Count != 10 || c.Workers != 16 || c.Seed != math.MinInt64 {
		t.Fatalf("integral numbers: %d %d %d %d %v", c.Iterations, c.Synthesize.Count, c.Workers, c.Seed, err)
	}
}

func TestPlanOrderAndKeys(t *testing.T) {
	c := Default()
	c.Iterations = 2
	steps := Plan(c)
	seen := map[string]bool{}
	var order []string
	for _, s := range steps {
		if seen[s.Key] {
			t.Fatalf("duplicate step key %s", s.Key)
		}
		seen[s.Key] = true
		order = append(order, s.Key)
	}
	want := "pool synthesize warm-demos warm-segment warm-sft it00-eval initial-pass it01-sample it01-rollout it01-segment it01-train it01-eval it02-sample"
	if got := strings.Join(order, " "); !strings.HasPrefix(got, want) {
		t.Fatalf("plan order:\n%s\nwant prefix\n%s", got, want)
	}
	if RunID(c) == RunID(Default()) {
		t.Fatal("the run id ignores the config")
	}
	// Recalibration every 2 iterations: after the train step of iteration 2
	// of 3 (not after the last), rolling out the filtered-out tasks.
	c.Iterations = 3
	var recal []string
	for _, s := range Plan(c) {
		if strings.HasSuffix(s.Key, "-recalibrate") {
			recal = append(recal, s.Key+" "+strings.Join(s.Flags, " "))
		}
	}
	if len(recal) != 1 || !strings.HasPrefix(recal[0], "it02-recalibrate --policy checkpoint --recalibrate --split train --n 4 ") {
		t.Fatalf("recalibration steps: %q", recal)
	}
	c.Iterations = 2
	c.LimitTasks = 5
	for _, s := range Plan(c) {
		if s.Command[0] == "rollout" && !strings.Contains(strings.Join(s.Flags, " "), "--limit-tasks 5") {
			t.Fatalf("%s lacks the task limit", s.Key)
		}
	}
}

// TestCausalPlan: the causal policy's loop renders screenshots everywhere,
// segments the demonstrations before SFT, and cuts every segment run in the
// pointer view with the model's image tokens; rollouts read the context
// the segment stage rebuilds.
func TestCausalPlan(t *testing.T) {
	c := Default()
	c.Policy, c.Iterations, c.Warmstart.Batch = "causal", 1, 8
	var keys []string
	for _, s := range Plan(c) {
		keys = append(keys, s.Key)
		flags := strings.Join(s.Flags, " ")
		if strings.Contains(flags, "--tree-only") {
			t.Fatalf("%s renders no screenshots: %s", s.Key, flags)
		}
		switch s.Command[0] {
		case "segment":
			if !strings.Contains(flags, "--view pointer --image-tokens 8") || strings.Contains(flags, "--tokenizer checkpoint") {
				t.Fatalf("%s: %s", s.Key, flags)
			}
		case "rollout":
			if strings.Contains(flags, "checkpoint") && !strings.Contains(flags, "--context window --k 5 --delta 5") {
				t.Fatalf("%s: %s", s.Key, flags)
			}
		case "train":
			if s.Key == "warm-sft" && !strings.Contains(flags, "--policy causal") || !strings.Contains(flags, "--batch 8") && s.Key == "warm-sft" {
				t.Fatalf("%s: %s", s.Key, flags)
			}
		}
	}
	want := "pool synthesize warm-demos warm-segment warm-sft it00-eval initial-pass it01-sample it01-rollout it01-segment it01-train it01-eval"
	if got := strings.Join(keys, " "); !strings.HasPrefix(got, want) {
		t.Fatalf("plan %s", got)
	}
	c.Policy = "lstm"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "lstm") {
		t.Fatalf("unknown policy: %v", err)
	}
}

// TestTreeOnlyIsRefused: the loop renders screenshots in every rollout
// (the causal policy reads them, and segments, exports and viewer pages
// have pixels); rollout.tree_only, which served the removed
// encoder-decoder, is a config error naming the key.
func TestTreeOnlyIsRefused(t *testing.T) {
	c := Default()
	c.Iterations = 1
	rollouts := 0
	for _, s := range Plan(c) {
		if s.Command[0] == "rollout" {
			rollouts++
			if strings.Contains(strings.Join(s.Flags, " "), "--tree-only") {
				t.Fatalf("default plan: %s is tree-only", s.Key)
			}
		}
	}
	if rollouts == 0 {
		t.Fatal("default plan has no rollouts")
	}
	c.Rollout.TreeOnly = true
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "rollout.tree_only") || !strings.Contains(err.Error(), "7878f89") {
		t.Fatalf("tree_only must be refused naming the key and the removal: %v", err)
	}
}

// TestEncDecRemoved: policy: encdec is refused with the removal message,
// naming the commit it was last in and the causal policy.
func TestEncDecRemoved(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	c.Policy = "encdec"
	err := c.Validate()
	if !errors.Is(err, ErrEncDecRemoved) {
		t.Fatalf("policy encdec: %v, want ErrEncDecRemoved", err)
	}
	for _, want := range []string{"encoder-decoder", "removed", "7878f89", "causal"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("policy encdec: %q lacks %q", err, want)
		}
	}
}

// TestExampleIsTheDefault: examples/pipeline.yaml says it is the defaults
// with every key written out; it must stay so.
func TestExampleIsTheDefault(t *testing.T) {
	c, err := Load(filepath.Join("..", "..", "examples", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Fatalf("examples/pipeline.yaml differs from Default():\n%+v\n%+v", c, Default())
	}
}

// The DTAC example config makes every channel live at B = 32: ICS draws at
// least one infeasible task per batch, and the sample step passes DTAC's own
// EMA, ICS ratio and replay cap.
func TestDTACExampleConfig(t *testing.T) {
	c, err := Load("../../examples/pipeline-dtac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := sample.DefaultDTAC()
	p.ICSRatio = c.Sample.ICSRatio
	if _, _, ics := sample.DTACSplit(c.Sample.Batch, p); ics < 1 {
		t.Fatalf("ics_ratio %v at batch %d draws %d infeasible tasks", c.Sample.ICSRatio, c.Sample.Batch, ics)
	}
	for _, s := range Plan(c) {
		if s.Key == "it01-sample" {
			f := strings.Join(s.Flags, " ")
			if !strings.Contains(f, "--sampler dtac") || !strings.Contains(f, "--ema-beta 0.7") || !strings.Contains(f, "--ics-ratio 0.04") ||
				strings.Contains(f, "--alpha") {
				t.Fatalf("sample flags: %s", f)
			}
			return
		}
	}
	t.Fatal("no it01-sample step")
}

// TestAsyncPlan: async: true pairs iteration t's train with iteration
// t+1's rollout (one group, read from the snapshot the group starts at),
// after sample t+1 and before recalibration, evaluation and segment t+1;
// the last train runs alone; the sync plan has no groups and keeps its run
// id (async is left out of the JSON when false).
func TestAsyncPlan(t *testing.T) {
	c := Default()
	c.Iterations = 3
	sync := RunID(c)
	for _, s := range Plan(c) {
		if s.Group != "" {
			t.Fatalf("sync plan has a group: %s", s.Key)
		}
	}
	c.Async = true
	if RunID(c) == sync {
		t.Fatal("async must change the run id")
	}
	var keys []string
	groups := map[string][]string{}
	for _, s := range Plan(c) {
		k := s.Key
		if s.Group != "" {
			groups[s.Group] = append(groups[s.Group], s.Key)
			k = "[" + k + "]"
		}
		keys = append(keys, k)
	}
	want := "it00-eval initial-pass it01-sample it01-rollout it01-segment " +
		"it02-sample [it01-train] [it02-rollout] it01-eval it02-segment " +
		"it03-sample [it02-train] [it03-rollout] it02-recalibrate it02-eval it03-segment it03-train it03-eval"
	if got := strings.Join(keys, " "); !strings.Contains(got, want) {
		t.Fatalf("async plan:\n%s\nwant\n%s", got, want)
	}
	if len(groups) != 2 || len(groups["it01-train+it02-rollout"]) != 2 {
		t.Fatalf("groups %v", groups)
	}
	if len(Plan(c)) != len(Plan(func() Config { d := c; d.Async = false; return d }())) {
		t.Fatal("async must reorder the steps, not add or drop any")
	}
}

// TestRunIDSpelledOutDefault: rollout.reward "judge" is the stage's default,
// so spelling it out must name the run that leaving it out names (an
// experiment's judge variant then shares another's default run), while a
// different reward is a different run.
func TestRunIDSpelledOutDefault(t *testing.T) {
	c := Default()
	c.Rollout.Reward = ""
	judge := c
	judge.Rollout.Reward = "judge"
	verifier := c
	verifier.Rollout.Reward = "verifier"
	if RunID(judge) != RunID(c) {
		t.Fatalf("reward judge: run %s, want the default's %s", RunID(judge), RunID(c))
	}
	if RunID(verifier) == RunID(c) {
		t.Fatalf("reward verifier names the default's run %s", RunID(c))
	}
	if judge.Rollout.Reward != "judge" {
		t.Fatalf("RunID changed its argument: reward %q", judge.Rollout.Reward)
	}
}

// TestValidateRefusesWhatAStepWouldFailOn: each one-key change to the
// defaults below used to pass Validate and fail (or silently take the
// stage's default) only when its step ran, after earlier steps committed.
// Each is refused naming the key and what it allows.
func TestValidateRefusesWhatAStepWouldFailOn(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"unknown audit", func(c *Config) { c.Audits = []string{"health", "bogus"} }, `audits holds "bogus", want overlap, verifier, synthesis, health`},
		{"judges audit", func(c *Config) { c.Audits = []string{"judges"} }, `audits holds "judges": the judges audit needs human labels`},
		{"audit twice", func(c *Config) { c.Audits = []string{"health", "health"} }, `audits holds "health" twice`},
		{"eval split", func(c *Config) { c.Eval.Split = "bogus" }, `eval.split is "bogus", want heldout or train`},
		{"empty eval split", func(c *Config) { c.Eval.Split = "" }, `eval.split is "", want heldout or train`},
		{"p_min above p_max", func(c *Config) { c.Sample.PMin = 0.95 }, `sample.p_min and sample.p_max are 0.95 and 0.9, want 0 <= p_min <= p_max <= 1`},
		{"p_max above 1", func(c *Config) { c.Sample.PMax = 1.5 }, `sample.p_min and sample.p_max are 0.1 and 1.5`},
		{"p_min below 0", func(c *Config) { c.Sample.PMin = -0.1 }, `sample.p_min and sample.p_max are -0.1 and 0.9`},
		{"p_min NaN", func(c *Config) { c.Sample.PMin = math.NaN() }, `sample.p_min and sample.p_max are NaN and 0.9`},
		{"train lr negative", func(c *Config) { c.Train.LR = -1 }, `train.lr is -1, want a finite number > 0`},
		{"train lr zero", func(c *Config) { c.Train.LR = 0 }, `train.lr is 0, want a finite number > 0`},
		{"train lr NaN", func(c *Config) { c.Train.LR = math.NaN() }, `train.lr is NaN, want a finite number > 0`},
		{"train lr Inf", func(c *Config) { c.Train.LR = math.Inf(1) }, `train.lr is +Inf, want a finite number > 0`},
		{"warmstart lr zero", func(c *Config) { c.Warmstart.LR = 0 }, `warmstart.lr is 0, want a finite number > 0`},
		{"warmstart lr NaN", func(c *Config) { c.Warmstart.LR = math.NaN() }, `warmstart.lr is NaN, want a finite number > 0`},
		{"train steps zero", func(c *Config) { c.Train.Steps = 0 }, `train.steps is 0, want >= 1`},
		{"warmstart steps zero", func(c *Config) { c.Warmstart.Steps = 0 }, `warmstart.steps is 0, want >= 1`},
		{"warmstart max_turns zero", func(c *Config) { c.Warmstart.MaxTurns = 0 }, `warmstart.max_turns is 0, want >= 1`},
		{"segment mode", func(c *Config) { c.Segment.Mode = "nope" }, `segment.mode is "nope", want trajectory, step or window`},
		{"segment k zero", func(c *Config) { c.Segment.K = 0 }, `segment.k is 0, want 1..1024`},
		{"segment delta zero", func(c *Config) { c.Segment.Delta = 0 }, `segment.delta is 0, want 1..1024`},
		{"segment k huge", func(c *Config) { c.Segment.K = math.MaxInt }, fmt.Sprintf(`segment.k is %d, want 1..1024`, math.MaxInt)},
		{"segment sum", func(c *Config) { c.Segment.K, c.Segment.Delta = 1000, 100 }, `segment.k + segment.delta is 1100, want <= 1024`},
		{"synthesize backend", func(c *Config) { c.Synthesize.Backend = "nope" }, `synthesize.backend is "nope", want builtin or openai`},
		{"synthesize count", func(c *Config) { c.Synthesize.Count = -1 }, `synthesize.count is -1, want >= 0`},
		{"limit_tasks negative", func(c *Config) { c.LimitTasks = -3 }, `limit_tasks is -3, want >= 0`},
		{"workers huge", func(c *Config) { c.Workers = 5000 }, `workers is 5000, want 1..1024`},
	} {
		cfg := Default()
		c.set(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// An explicit 0 in a file is the user's value, not "the default".
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("train: {steps: 0}\nwarmstart: {steps: 0}\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "train.steps is 0, want >= 1") || !strings.Contains(err.Error(), "warmstart.steps is 0, want >= 1") {
		t.Errorf("explicit zero steps: %v", err)
	}
	// What the loop's own configs write stays valid: no audits, batch 0
	// (the train stage's default), a whole window of 1024, step mode.
	ok := Default()
	ok.Audits, ok.Warmstart.Batch, ok.Segment.K, ok.Segment.Delta, ok.Synthesize.Count = nil, 0, 1000, 24, 0
	ok.Eval.Split, ok.Segment.Mode, ok.Sample.PMin, ok.Sample.PMax = "train", "step", 0, 1
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
}

// TestExampleConfigsValidate: every examples/*.yaml loads through Load
// (strict keys, then Validate).
func TestExampleConfigsValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestCoverageKeepsRunIDs: warmstart.coverage 1 (every training task
// demonstrated) is the default and names the run that configs from before
// the field named (the golden ids are RunID(Default()) at seeds 1 and 2 as
// committed by cualake/0.1.6; the default warmstart.dropout, 0, is left
// out of the id), so a lake's warm starts and arms are still found; a
// fraction is another run, and its demonstrations step says it.
func TestCoverageKeepsRunIDs(t *testing.T) {
	c := Default()
	if c.Warmstart.Coverage != 1 {
		t.Fatalf("default coverage %v, want 1", c.Warmstart.Coverage)
	}
	if got := RunID(c); got != "5319d0077d35" {
		t.Fatalf("default run id %s, want 0.1.6's 5319d0077d35", got)
	}
	c.Seed = 2
	if got := RunID(c); got != "abc4470c632c" {
		t.Fatalf("seed 2 run id %s, want 0.1.6's abc4470c632c", got)
	}
	demoFlags := func(c Config) string { return stepFlags(t, c, "warm-demos") }
	if f := demoFlags(c); strings.Contains(f, "--coverage") {
		t.Fatalf("coverage 1 passes a flag: %s", f)
	}
	part := c
	part.Warmstart.Coverage = 0.25
	if RunID(part) == RunID(c) {
		t.Fatal("coverage 0.25 names the default's run")
	}
	if f := demoFlags(part); !strings.Contains(f, "--coverage 0.25") {
		t.Fatalf("warm-demos flags %q lack --coverage 0.25", f)
	}
	if err := part.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []float64{0, -0.5, 1.5, math.NaN()} {
		b := c
		b.Warmstart.Coverage = bad
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "warmstart.coverage") {
			t.Fatalf("coverage %v: %v", bad, err)
		}
	}
}

// TestCoverByTemplate: warmstart.cover_by template passes --cover-by
// template to the demonstrations and is another run; family, spelled out,
// names the default's run and passes nothing; an unknown value, or
// template with every task demonstrated, is refused naming the key.
func TestCoverByTemplate(t *testing.T) {
	c := Default()
	c.Warmstart.Coverage = 0.25
	demoFlags := func(c Config) string { return stepFlags(t, c, "warm-demos") }
	fam := c
	fam.Warmstart.CoverBy = "family"
	if RunID(fam) != RunID(c) || strings.Contains(demoFlags(fam), "--cover-by") {
		t.Fatalf("cover_by family: run %s (default %s), flags %q", RunID(fam), RunID(c), demoFlags(fam))
	}
	tm := c
	tm.Warmstart.CoverBy = "template"
	if err := tm.Validate(); err != nil {
		t.Fatal(err)
	}
	if RunID(tm) == RunID(c) {
		t.Fatal("cover_by template names the default's run")
	}
	if f := demoFlags(tm); !strings.Contains(f, "--coverage 0.25 --cover-by template") {
		t.Fatalf("warm-demos flags %q lack --cover-by template", f)
	}
	refused(t, tm, "warmstart.cover_by",
		func(c *Config) { c.Warmstart.CoverBy = "task" },
		func(c *Config) { c.Warmstart.Coverage = 1 })
}

// TestRFTPlan: rft.iterations k makes the first k RL iterations rounds of
// rejection-sampling fine-tuning: round 1 segments and imitates the initial
// pass, each later round first rolls the policy out on the whole training
// pool (or, rft.pass unsolved, on its unsolved tasks); GRPO iterations follow, numbered on, in sync and async plans. With
// RFT off the run id is the one from before the field.
func TestRFTPlan(t *testing.T) {
	c := Default()
	c.Iterations = 4
	off := RunID(c)
	c.RFT.Steps = 99 // ignored while off
	if RunID(c) != off {
		t.Fatal("RFT settings change the run id while rft.iterations is 0")
	}
	c.RFT.Iterations = 2
	if RunID(c) == off {
		t.Fatal("rft.iterations 2 names the GRPO run")
	}
	c.RFT.Steps = 400
	// The controls pass --imitate; the default passes nothing, so the
	// run id of a config that writes `imitate: both` is the default's.
	both := RunID(c)
	// A non-default option names another run and reaches round 2's train
	// flags; set back to its default, the run id is the default's again.
	for _, o := range []struct {
		field         *string
		value, flag   string
		defaultString string
	}{
		{&c.RFT.Imitate, "demos", "--imitate demos", "both"},
		{&c.RFT.Pick, "shortest", "--pick shortest", "random"},
		{&c.RFT.Balance, "actions", "--balance actions", "none"},
	} {
		*o.field = o.value
		if RunID(c) == both {
			t.Fatalf("%s names the default run", o.flag)
		}
		for _, s := range Plan(c) {
			if s.Key == "it02-train" && !strings.Contains(strings.Join(s.Flags, " "), " "+o.flag+" ") {
				t.Fatalf("%s, it02-train: %v", o.flag, s.Flags)
			}
		}
		if *o.field = o.defaultString; RunID(c) != both {
			t.Fatalf("%s spelled out changes the default's run id", o.defaultString)
		}
	}
	flags := map[string]string{}
	var keys []string
	for _, s := range Plan(c) {
		keys = append(keys, s.Key)
		flags[s.Key] = strings.Join(s.Flags, " ")
		if s.Command[0] == "train" && s.Iteration >= 1 && s.Iteration <= 2 &&
			(!strings.HasPrefix(flags[s.Key], "--objective rft --steps 400 --lr 0.01 --per-task 1 --seed ") || strings.Contains(flags[s.Key], "--imitate") || strings.Contains(flags[s.Key], "--pick") || strings.Contains(flags[s.Key], "--balance")) {
			t.Fatalf("%s: %s", s.Key, flags[s.Key])
		}
	}
	want := "it00-eval initial-pass it01-segment it01-train it01-eval it02-rollout it02-segment it02-train it02-eval " +
		"it03-sample it03-rollout it03-segment it03-train it03-eval it04-sample"
	if got := strings.Join(keys, " "); !strings.Contains(got, want) {
		t.Fatalf("rft plan:\n%s\nwant\n%s", got, want)
	}
	if f := flags["it02-rollout"]; !strings.HasPrefix(f, "--policy checkpoint --split train --n 8 --iteration 2 ") || strings.Contains(f, "--unsolved") {
		t.Fatalf("it02-rollout: %s", f)
	}
	// rft.pass unsolved: the passes before rounds 2.. roll out only the
	// tasks with no verified success (the initial pass stays whole); all,
	// spelled out, is the default run.
	byPass := RunID(c)
	if c.RFT.Pass = ""; RunID(c) != byPass { // the JSON of configs from before the field
		t.Fatal("rft.pass all names another run than rft.pass left out")
	}
	c.RFT.Pass = "unsolved"
	if RunID(c) == byPass {
		t.Fatal("rft.pass unsolved names the default run")
	}
	for _, s := range Plan(c) {
		f := strings.Join(s.Flags, " ")
		if unsolved := strings.Contains(f, "--unsolved"); unsolved != (s.Key == "it02-rollout") {
			t.Fatalf("rft.pass unsolved, %s: %s", s.Key, f)
		}
	}
	c.RFT.Pass = "all"
	if f := flags["it03-train"]; !strings.HasPrefix(f, "--objective grpo ") {
		t.Fatalf("it03-train: %s", f)
	}
	// The batch after the rounds keeps its iteration's number (one round
	// rolls out nothing at iteration 1); plans without RFT keep their flags.
	if f := flags["it03-sample"]; !strings.HasSuffix(f, " --iteration 3") {
		t.Fatalf("it03-sample: %s", f)
	}
	one := c
	one.RFT.Iterations = 1
	for _, s := range Plan(one) {
		if s.Key == "it02-sample" && !strings.HasSuffix(strings.Join(s.Flags, " "), " --iteration 2") {
			t.Fatalf("one round, it02-sample: %v", s.Flags)
		}
	}
	for _, s := range Plan(Default()) {
		if s.Command[0] == "sample" && slices.Contains(s.Flags, "--iteration") {
			t.Fatalf("without RFT, %s: %v", s.Key, s.Flags)
		}
	}
	c.Async = true
	keys = keys[:0]
	for _, s := range Plan(c) {
		k := s.Key
		if s.Group != "" {
			k = "[" + k + "]{" + s.Group + "}"
		}
		keys = append(keys, k)
	}
	want = "it02-train it02-eval it03-sample it03-rollout it03-segment it04-sample [it03-train]{it03-train+it04-rollout} [it04-rollout]{it03-train+it04-rollout}"
	if got := strings.Join(keys, " "); !strings.Contains(got, want) {
		t.Fatalf("async rft plan:\n%s\nwant\n%s", got, want)
	}
	refused(t, c, "rft.",
		func(c *Config) { c.RFT.Iterations = 5 },
		func(c *Config) { c.RFT.Iterations = -1 },
		func(c *Config) { c.RFT.LR = 0 },
		func(c *Config) { c.RFT.PerTask = -1 },
		func(c *Config) { c.RFT.N = 0 },
		func(c *Config) { c.RFT.Imitate = "all" },
		func(c *Config) { c.RFT.Pass = "both" },
		func(c *Config) { c.RFT.Pick = "longest" },
		func(c *Config) { c.RFT.Balance = "templates" },
	)
}

// stepFlags is the flags of c's plan step key, joined by spaces.
func stepFlags(t *testing.T, c Config, key string) string {
	t.Helper()
	for _, s := range Plan(c) {
		if s.Key == key {
			return strings.Join(s.Flags, " ")
		}
	}
	t.Fatalf("no %s step", key)
	return ""
}

// warmstart.dim and warmstart.layers reach the warm start's train flags
// only when set, so a config without them keeps its run id; a width that
// is no multiple of the 4 heads is refused before anything runs.
func TestWarmstartModelSize(t *testing.T) {
	c := Default()
	base := RunID(c)
	sft := func(c Config) string { return stepFlags(t, c, "warm-sft") }
	if f := sft(c); strings.Contains(f, "--dim") || strings.Contains(f, "--layers") {
		t.Fatalf("default warm start: %s", f)
	}
	c.Warmstart.Dim, c.Warmstart.Layers = 128, 3
	if RunID(c) == base || !strings.Contains(sft(c), "--dim 128 --layers 3") {
		t.Fatalf("warmstart.dim 128, layers 3: run id %s (default %s), flags %s", RunID(c), base, sft(c))
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	refused(t, c, "warmstart.",
		func(c *Config) { c.Warmstart.Dim = 66 },
		func(c *Config) { c.Warmstart.Layers = 33 },
	)
}

// warmstart.dropout and rft.dropout (default 0; make demo's 0.1) reach
// the warm start's and every RFT round's train flags, spelled out even at
// 0 (train's own default is 0.1), and never a GRPO iteration's; a
// nonzero one names another run, and a probability outside [0, 1) is
// refused before anything runs.
func TestDropoutFlags(t *testing.T) {
	c := Default()
	c.Iterations, c.RFT.Iterations = 3, 2
	if c.Warmstart.Dropout != 0 || c.RFT.Dropout != 0 {
		t.Fatalf("default dropout %v, %v; want 0, 0", c.Warmstart.Dropout, c.RFT.Dropout)
	}
	for _, k := range []string{"warm-sft", "it01-train", "it02-train"} {
		if f := stepFlags(t, c, k); !strings.Contains(f+" ", "--dropout 0 ") {
			t.Fatalf("%s: %s", k, f)
		}
	}
	if f := stepFlags(t, c, "it03-train"); strings.Contains(f, "--dropout") {
		t.Fatalf("the GRPO iteration trains with dropout: %s", f)
	}
	base := RunID(c)
	c.Warmstart.Dropout = 0.1
	ws := RunID(c)
	if ws == base || !strings.Contains(stepFlags(t, c, "warm-sft"), "--dropout 0.1 ") {
		t.Fatalf("warmstart.dropout 0.1: run id %s (default %s), flags %s", ws, base, stepFlags(t, c, "warm-sft"))
	}
	if f := stepFlags(t, c, "it01-train"); !strings.HasSuffix(f, "--dropout 0") {
		t.Fatalf("warmstart.dropout reached the RFT round: %s", f)
	}
	c.RFT.Dropout = 0.2
	if RunID(c) == ws {
		t.Fatal("rft.dropout names another config's run")
	}
	for _, k := range []string{"it01-train", "it02-train"} {
		if f := stepFlags(t, c, k); !strings.HasSuffix(f, "--dropout 0.2") {
			t.Fatalf("%s: %s", k, f)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	refused(t, c, "dropout",
		func(c *Config) { c.Warmstart.Dropout = 1 },
		func(c *Config) { c.Warmstart.Dropout = math.NaN() },
		func(c *Config) { c.RFT.Dropout = -0.1 },
	)
}

// rft.augment n synthesizes n trajectory-guided tasks before the pass of
// every round after the first, so that the pass rolls them out; 0 plans
// what it planned before the field (same steps, same run id), and a config
// where no such pass exists, or a negative count, is refused.
func TestAugmentSteps(t *testing.T) {
	c := Default()
	c.Iterations, c.RFT.Iterations, c.RFT.Pass = 3, 3, "unsolved"
	off := RunID(c)
	var keys []string
	for _, s := range Plan(c) {
		if s.Command[0] == "synthesize" && s.Key != "synthesize" {
			t.Fatalf("rft.augment 0 plans %s", s.Key)
		}
	}
	c.RFT.Augment = 20
	if RunID(c) == off {
		t.Fatal("rft.augment 20 names the run without it")
	}
	for _, s := range Plan(c) {
		keys = append(keys, s.Key)
	}
	want := "it01-train it01-eval it02-synthesize it02-rollout it02-segment it02-train it02-eval it03-synthesize it03-rollout"
	if got := strings.Join(keys, " "); !strings.Contains(got, want) || strings.Contains(got, "it01-synthesize") {
		t.Fatalf("plan:\n%s\nwant\n%s", got, want)
	}
	if f := stepFlags(t, c, "it02-synthesize"); !strings.HasPrefix(f, "--from-trajectories --count 20 --seed 1902 ") {
		t.Fatalf("it02-synthesize: %s", f)
	}
	if f2, f3 := stepFlags(t, c, "it02-synthesize"), stepFlags(t, c, "it03-synthesize"); f2 == f3 {
		t.Fatalf("both rounds synthesize with the same seed: %s", f2)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	refused(t, c, "rft.augment",
		func(c *Config) { c.RFT.Augment = -1 },
		func(c *Config) { c.RFT.Iterations = 1 },
	)
}

// rft.restart passes --restart to every round's train (and no other
// train), and names another run; off, the run id is the one from before
// the field.
func TestRestartFlag(t *testing.T) {
	c := Default()
	c.Iterations, c.RFT.Iterations = 3, 2
	off := RunID(c)
	for _, s := range Plan(c) {
		if slices.Contains(s.Flags, "--restart") {
			t.Fatalf("rft.restart false: %s has --restart", s.Key)
		}
	}
	c.RFT.Restart = true
	if RunID(c) == off {
		t.Fatal("rft.restart names the run without it")
	}
	for _, s := range Plan(c) {
		round := s.Command[0] == "train" && s.Iteration >= 1 && s.Iteration <= 2
		if slices.Contains(s.Flags, "--restart") != round {
			t.Fatalf("rft.restart: %s %v", s.Key, s.Flags)
		}
	}
}

// refused checks that each change to c makes Validate fail with an error
// that names key.
func refused(t *testing.T, c Config, key string, changes ...func(c *Config)) {
	t.Helper()
	for i, change := range changes {
		b := c
		change(&b)
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), key) {
			t.Fatalf("change %d: %v; want an error naming %s", i, err, key)
		}
	}
}
