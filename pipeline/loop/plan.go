package loop

import (
	"fmt"
	"strconv"
)

// Step is one stage command of the loop.
type Step struct {
	Key       string   // stable and unique within a run: "it02-rollout"
	Title     string   // for progress lines
	Command   []string // the cualake command path, e.g. ["audit", "health"]
	Flags     []string // its flags (the runner adds --lake)
	Iteration int      // -1 outside the RL iterations
	Weight    float64  // expected duration in seconds on 2 cores (only ratios matter), for the time-left estimate
	// Group names the consecutive steps that run at once (the async loop's
	// train and next rollout); each reads the snapshot the group started
	// from (--in) and commits by rebase. "" runs alone.
	Group string
}

func itoa(n int) string             { return strconv.Itoa(n) }
func i64(n int64) string            { return strconv.FormatInt(n, 10) }
func ftoa(f float64) string         { return strconv.FormatFloat(f, 'g', -1, 64) }
func seedOf(c Config, k int) string { return i64(c.Seed*1000 + int64(k)) }

// CausalImageTokens is the image tokens per screenshot of the causal
// policy's default config (trainer/causal.DefaultConfig); its segments are
// cut with it.
const CausalImageTokens = 8

// Plan lists the loop's steps for a config. Every training rollout runs
// the newest checkpoint; evaluation rollouts on held-out tasks run after
// the warm start and after every iteration.
func Plan(c Config) []Step {
	w := itoa(c.Workers)
	var s []Step
	mk := func(key, title string, weight float64, it int, cmd []string, flags ...string) Step {
		if c.LimitTasks > 0 && cmd[0] == "rollout" {
			flags = append(flags, "--limit-tasks", itoa(c.LimitTasks))
		}
		return Step{Key: key, Title: title, Command: cmd, Flags: flags, Iteration: it, Weight: weight}
	}
	add := func(key, title string, weight float64, it int, cmd []string, flags ...string) {
		s = append(s, mk(key, title, weight, it, cmd, flags...))
	}
	// Weights are seconds measured on the 2-core demo machine (recorded
	// runs: pipeline/loop/testdata/*-steps.json), scaled by the config, so
	// that the time-left estimate holds from the first step
	// (TestTimeLeftWithin30Percent).
	pool := 250.0 // training tasks after synthesis, roughly
	rate := causalRates
	// Rollouts render screenshots (the causal policy reads them) and act in
	// a managed context, as segment rebuilds it: window, K, Delta.
	// how the checkpoint policy reads its context and redraws non-actions:
	// every rollout of a checkpoint takes these
	view := []string{"--context", c.Segment.Mode, "--k", itoa(c.Segment.K), "--delta", itoa(c.Segment.Delta),
		"--redraws", itoa(c.Rollout.Redraws)}
	segFlags := func() []string {
		return []string{"--mode", c.Segment.Mode, "--k", itoa(c.Segment.K), "--delta", itoa(c.Segment.Delta),
			"--view", "pointer", "--image-tokens", itoa(CausalImageTokens), "--workers", w}
	}
	add("pool", "seed the task pool", 1, -1, []string{"simdesk", "pool"})
	if c.Synthesize.Count > 0 {
		f := []string{"--backend", c.Synthesize.Backend, "--count", itoa(c.Synthesize.Count), "--seed", seedOf(c, 1), "--workers", w}
		for _, r := range c.Synthesize.Without {
			f = append(f, "--without", r)
		}
		add("synthesize", "synthesize tasks (VeriGen)", 0.02*float64(c.Synthesize.Count), -1, []string{"synthesize"}, f...)
	}
	demoFlags := []string{"--policy", "oracle", "--source", "warmstart", "--split", "train", "--n", itoa(c.Warmstart.Demos),
		"--max-turns", itoa(c.Warmstart.MaxTurns), "--seed", seedOf(c, 2), "--workers", w}
	if c.Warmstart.Coverage != 1 {
		demoFlags = append(demoFlags, "--coverage", ftoa(c.Warmstart.Coverage))
	}
	if c.Warmstart.CoverBy == "template" {
		demoFlags = append(demoFlags, "--cover-by", "template")
	}
	add("warm-demos", "warm start: oracle demonstrations", 0.009*pool*float64(c.Warmstart.Demos)*max(c.Warmstart.Coverage, 0.1), -1, []string{"rollout"}, demoFlags...)
	sftFlags := []string{"--objective", "sft", "--steps", itoa(c.Warmstart.Steps), "--lr", ftoa(c.Warmstart.LR), "--seed", seedOf(c, 3)}
	if c.Warmstart.Batch > 0 {
		sftFlags = append(sftFlags, "--batch", itoa(c.Warmstart.Batch))
	}
	if c.Warmstart.Dim > 0 {
		sftFlags = append(sftFlags, "--dim", itoa(c.Warmstart.Dim))
	}
	if c.Warmstart.Layers > 0 {
		sftFlags = append(sftFlags, "--layers", itoa(c.Warmstart.Layers))
	}
	// Always spelled out: train's default (0.1) is not the config's (0).
	sftFlags = append(sftFlags, "--dropout", ftoa(c.Warmstart.Dropout))
	sftFlags = append(sftFlags, "--policy", c.Policy)
	add("warm-segment", "warm start: segment the demonstrations ("+c.Segment.Mode+")", 2, -1, []string{"segment"}, segFlags()...)
	add("warm-sft", "warm start: supervised fine-tuning", rate.sftStep*float64(c.Warmstart.Steps), -1, []string{"train"}, sftFlags...)
	evalStep := func(it int) Step {
		return mk(fmt.Sprintf("it%02d-eval", it), fmt.Sprintf("evaluate on held-out tasks (after iteration %d)", it), rate.eval*float64(c.Eval.N), it, []string{"rollout"},
			append([]string{"--policy", "checkpoint", "--source", "eval", "--greedy", "--split", c.Eval.Split, "--n", itoa(c.Eval.N), "--iteration", itoa(it),
				"--max-turns", itoa(c.Rollout.MaxTurns), "--seed", seedOf(c, 100+it), "--workers", w}, view...)...)
	}
	s = append(s, evalStep(0))
	add("initial-pass", "initial pass over the training pool", rate.initial*pool*float64(c.InitialPass.N), 0, []string{"rollout"},
		append([]string{"--policy", "checkpoint", "--split", "train", "--n", itoa(c.InitialPass.N), "--iteration", "0",
			"--max-turns", itoa(c.Rollout.MaxTurns), "--seed", seedOf(c, 4), "--workers", w}, view...)...)
	// RFT rounds first (sequential, in async runs too), then GRPO.
	for it := 1; it <= c.RFT.Iterations; it++ {
		title := func(what string) string { return fmt.Sprintf("iteration %d/%d: %s", it, c.Iterations, what) }
		if it > 1 {
			if c.RFT.Augment > 0 {
				// Before the pass, so that it rolls the new tasks out.
				add(fmt.Sprintf("it%02d-synthesize", it), title("trajectory-guided tasks (split failed, compose solved)"), 0.1*float64(c.RFT.Augment), it,
					[]string{"synthesize"}, "--from-trajectories", "--count", itoa(c.RFT.Augment), "--seed", seedOf(c, 900+it), "--workers", w)
			}
			pass, weight := []string{"--policy", "checkpoint", "--split", "train", "--n", itoa(c.RFT.N), "--iteration", itoa(it),
				"--max-turns", itoa(c.Rollout.MaxTurns), "--seed", seedOf(c, 700+it), "--workers", w}, rate.initial*pool*float64(c.RFT.N)
			what := "RFT pass over the training pool"
			if c.RFT.Pass == "unsolved" {
				pass, weight, what = append(pass, "--unsolved"), weight*unsolvedShare, "RFT pass over the unsolved training tasks"
			}
			weight += rate.initial * float64(c.RFT.Augment*c.RFT.N) // the new tasks are unsolved
			add(fmt.Sprintf("it%02d-rollout", it), title(what), weight, it, []string{"rollout"}, append(pass, view...)...)
		}
		add(fmt.Sprintf("it%02d-segment", it), title("segment ("+c.Segment.Mode+")"), 2, it, []string{"segment"}, segFlags()...)
		rft := []string{"--objective", "rft", "--steps", itoa(c.RFT.Steps), "--lr", ftoa(c.RFT.LR), "--per-task", itoa(c.RFT.PerTask), "--seed", seedOf(c, 800+it)}
		if c.RFT.Imitate != "both" {
			rft = append(rft, "--imitate", c.RFT.Imitate)
		}
		if c.RFT.Pick != "random" {
			rft = append(rft, "--pick", c.RFT.Pick)
		}
		if c.RFT.Restart {
			rft = append(rft, "--restart")
		}
		if c.RFT.Balance != "none" && c.RFT.Balance != "" {
			rft = append(rft, "--balance", c.RFT.Balance)
		}
		rft = append(rft, "--dropout", ftoa(c.RFT.Dropout))
		add(fmt.Sprintf("it%02d-train", it), title("train (RFT on the verified successes)"), rate.sftStep*float64(c.RFT.Steps), it, []string{"train"}, rft...)
		s = append(s, evalStep(it))
	}
	iters := make([]iterSteps, c.Iterations+1)
	for it := c.RFT.Iterations + 1; it <= c.Iterations; it++ {
		var is iterSteps
		title := func(what string) string { return fmt.Sprintf("iteration %d/%d: %s", it, c.Iterations, what) }
		ema := []string{"--alpha", ftoa(c.Sample.Alpha)}
		if c.Sample.Sampler == "dtac" {
			ema = []string{"--ema-beta", ftoa(c.Sample.EMABeta), // EvoCUA-1.5 eq. 16
				"--ics-ratio", ftoa(c.Sample.ICSRatio), "--replay-cap", itoa(c.Sample.ReplayCap), "--max-stale", itoa(c.Train.MaxStale)}
		}
		sampleFlags := append(append([]string{"--sampler", c.Sample.Sampler, "--batch", itoa(c.Sample.Batch)}, ema...),
			"--p-min", ftoa(c.Sample.PMin), "--p-max", ftoa(c.Sample.PMax), "--seed", seedOf(c, 200+it))
		if c.RFT.Iterations > 0 {
			// RFT round 1 rolls out nothing at iteration 1: the batch keeps
			// the iteration's number (plans without RFT keep their flags).
			sampleFlags = append(sampleFlags, "--iteration", itoa(it))
		}
		is.sample = mk(fmt.Sprintf("it%02d-sample", it), title("sample ("+c.Sample.Sampler+")"), 0.25, it, []string{"sample"}, sampleFlags...)
		rollFlags := []string{"--policy", "checkpoint", "--n", itoa(c.Rollout.N), "--max-turns", itoa(c.Rollout.MaxTurns),
			"--seed", seedOf(c, 300+it), "--workers", w}
		if c.Rollout.Reward != "" {
			// Only the training rollouts take it: evaluation counts outcomes.
			rollFlags = append(rollFlags, "--reward", c.Rollout.Reward)
		}
		is.rollout = mk(fmt.Sprintf("it%02d-rollout", it), title("rollout"), rate.rollout*float64(c.Sample.Batch*c.Rollout.N), it, []string{"rollout"},
			append(rollFlags, view...)...)
		if c.Sample.Sampler == "dapo" {
			// DAPO dynamic sampling: refill until batch groups are informative.
			for r := 1; r <= c.Sample.DAPORefills; r++ {
				is.refills = append(is.refills, mk(fmt.Sprintf("it%02d-dapo-refill%d", it, r), title(fmt.Sprintf("dapo refill %d", r)), rate.rollout*float64(c.Sample.Batch*c.Rollout.N)/2, it, []string{"rollout"},
					append([]string{"--policy", "checkpoint", "--dapo-refill", itoa(c.Sample.Batch), "--n", itoa(c.Rollout.N), "--max-turns", itoa(c.Rollout.MaxTurns),
						"--seed", seedOf(c, 600+10*it+r), "--workers", w}, view...)...))
			}
		}
		segArgs := segFlags()
		if c.Train.Advantage == "stepo" && c.Segment.Mode == "step" {
			segArgs = append(segArgs, "--advantage", "stepo") // the segments then carry A_i/|T_i|, as the trainer uses
		}
		is.segment = mk(fmt.Sprintf("it%02d-segment", it), title("segment ("+c.Segment.Mode+")"), 2, it, []string{"segment"}, segArgs...)
		trainFlags := []string{"--objective", "grpo", "--advantage", c.Train.Advantage, "--steps", itoa(c.Train.Steps), "--lr", ftoa(c.Train.LR),
			"--max-stale", itoa(c.Train.MaxStale), "--seed", seedOf(c, 400+it)}
		if c.Train.MiniGroups > 0 {
			trainFlags = append(trainFlags, "--mini-groups", itoa(c.Train.MiniGroups))
		}
		is.train = mk(fmt.Sprintf("it%02d-train", it), title("train (GRPO, "+c.Train.Advantage+")"), rate.trainStep*float64(c.Train.Steps), it, []string{"train"}, trainFlags...)
		if r := c.Sample.RecalibrateEvery; r > 0 && it%r == 0 && it < c.Iterations {
			// EvoCUA-1.5 4.1: calibration repeats as the policy changes; the
			// next sample folds these rollouts in and lets tasks back in.
			is.recal = append(is.recal, mk(fmt.Sprintf("it%02d-recalibrate", it), title("recalibrate the filtered-out tasks"), rate.recal*pool*float64(c.Sample.RecalibrateN), it, []string{"rollout"},
				append([]string{"--policy", "checkpoint", "--recalibrate", "--split", "train", "--n", itoa(c.Sample.RecalibrateN),
					"--max-turns", itoa(c.Rollout.MaxTurns), "--seed", seedOf(c, 500+it), "--workers", w}, view...)...))
		}
		is.eval = evalStep(it)
		iters[it] = is
	}
	if c.Async {
		s = append(s, asyncOrder(iters[c.RFT.Iterations:])...)
	} else {
		for _, is := range iters[c.RFT.Iterations+1:] {
			s = append(s, is.sample, is.rollout)
			s = append(s, is.refills...)
			s = append(s, is.segment, is.train)
			s = append(s, is.recal...)
			s = append(s, is.eval)
		}
	}
	for _, a := range c.Audits {
		add("audit-"+a, "audit "+a, 0.5, -1, []string{"audit", a})
	}
	return s
}

// iterSteps are one RL iteration's steps, before they are ordered.
type iterSteps struct {
	sample, rollout Step
	refills         []Step // DAPO refills of the rollout
	segment, train  Step
	recal           []Step // recalibration after train (at most one)
	eval            Step
}

// asyncOrder orders the iterations iters[1:] (iters[0] is unused) for the asynchronous loop (EvoCUA-1.5
// 5.1): iteration t's train and iteration t+1's rollout run at once, as
// one group, both reading the snapshot the group starts from. The rollout
// thus acts with the newest checkpoint that exists then, one version older
// than the one train t is producing, and train t+1 meets its groups at a
// policy lag of one. Everything else stays sequential, so every step's
// input is the same whatever the timing: sample t+1 runs before the group
// (pass rates from rollout t, staleness against the rolling-out policy),
// DAPO refills, recalibration, evaluation and segment t+1 after it (the
// refills and recalibration then roll out with train t's checkpoint, and
// recalibration's episodes count toward iteration t+1, so sample t+2
// folds them in).
func asyncOrder(iters []iterSteps) []Step {
	n := len(iters) - 1
	if n < 1 {
		return nil
	}
	first := iters[1]
	s := append([]Step{first.sample, first.rollout}, first.refills...)
	s = append(s, first.segment)
	for t := 1; t <= n; t++ {
		cur := iters[t]
		if t == n {
			s = append(s, cur.train)
			s = append(s, cur.recal...)
			s = append(s, cur.eval)
			break
		}
		next := iters[t+1]
		group := fmt.Sprintf("it%02d-train+it%02d-rollout", cur.train.Iteration, next.rollout.Iteration)
		train, roll := cur.train, next.rollout
		train.Group, roll.Group = group, group
		s = append(s, next.sample, train, roll)
		s = append(s, next.refills...)
		s = append(s, cur.recal...)
		s = append(s, cur.eval, next.segment)
	}
	return s
}

// stepRates are seconds per unit of work of each step kind on the 2-core
// demo machine, per policy: an SFT or GRPO optimiser step, a held-out
// evaluation (58 tasks; 65 until 0.1.7), and an episode of the initial pass, of an
// iteration's rollout and of recalibration (per pool task and rollout).
type stepRates struct {
	sftStep, eval, initial, rollout, trainStep, recal float64
}

// unsolvedShare is the cost of an RFT pass with rft.pass unsolved against
// a pass over the whole training pool, for the time-left estimate: it
// rolls out about 40% of the tasks, whose episodes run longer (make
// demo's passes: 93 and 85 s against the initial pass's 157 s).
const unsolvedShare = 0.55

var (
	// the idle runs of 2026-12-06 with items and episodes on both cores:
	// make demo's (testdata/demo-steps.json) and the default's
	// (default-steps.json)
	causalRates = stepRates{sftStep: 0.5, eval: 5, initial: 0.079, rollout: 0.075, trainStep: 0.9, recal: 0.085}
)
