// Package loop runs the whole RL loop as a sequence of stage commits:
// seed pool, synthesis, warm start, the initial pass, then iterations of
// sample, rollout, segment and train, evaluation and audits. Each step is a
// stage command with arguments from the config; progress lives in the lake
// (one tag per finished step), so a killed run resumes where it stopped.
package loop

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// DefaultRedraws is how many more responses a model policy draws in a turn
// whose response is no action on the screen (rollout --redraws). Each
// costs a few tokens' decoding from the cached context; 0 executes the
// first response as written, whatever it is.
const DefaultRedraws = 4

// ErrEncDecRemoved is Validate's error for policy: encdec.
var ErrEncDecRemoved = errors.New("policy: encdec: the encoder-decoder policy was removed (last present in commit 7878f89) so that one item format, the segments row, feeds SFT and RL; the causal policy is the one: set policy: causal or delete the line")

// Config names every stage's parameters. Defaults follow the papers where
// they apply and are scaled to finish on a 2-core machine.
type Config struct {
	Seed       int64  `yaml:"seed" json:"seed"`
	Iterations int    `yaml:"iterations" json:"iterations"`
	Workers    int    `yaml:"workers" json:"workers"`
	Report     string `yaml:"report" json:"report"` // HTML report path
	// LimitTasks caps the tasks of every rollout step (0: the whole pool);
	// small configs for tests and smoke runs.
	LimitTasks int `yaml:"limit_tasks" json:"limit_tasks"`
	// Policy is the model, and the only one is causal (trainer/causal: a
	// decoder-only transformer over the segment stage's token streams;
	// rollouts render screenshots and record their prompt ids, and every
	// stage after rollout reads the segments rows). The encoder-decoder
	// ("encdec") was removed after commit 7878f89, so that one item format,
	// the segments row, feeds SFT and RL; Validate refuses it by name.
	Policy string `yaml:"policy" json:"policy"`
	// Async overlaps iteration t's train with iteration t+1's rollout
	// (EvoCUA-1.5 5.1; see asyncOrder). Left out of the JSON when false, so
	// synchronous configs keep their run id.
	Async bool `yaml:"async" json:"async,omitempty"`

	Synthesize struct {
		Count   int    `yaml:"count" json:"count"` // accepted tasks to add; 0 skips synthesis
		Backend string `yaml:"backend" json:"backend"`
		// Without removes VeriGen roles for an ablation (judger, fixer,
		// rule-validator). Empty in the JSON is left out, so configs that
		// never set it keep their run id.
		Without []string `yaml:"without" json:"without,omitempty"`
	} `yaml:"synthesize" json:"synthesize"`

	Warmstart struct {
		Demos    int     `yaml:"demos" json:"demos"` // oracle rollouts per training task
		Steps    int     `yaml:"steps" json:"steps"` // SFT optimiser steps
		LR       float64 `yaml:"lr" json:"lr"`
		MaxTurns int     `yaml:"max_turns" json:"max_turns"`
		Batch    int     `yaml:"batch" json:"batch"` // items per SFT step (0: the train stage's default)
		// Coverage is the fraction of each task family's training tasks
		// that get demonstrations (rollout --coverage): 1 demonstrates
		// every task; less leaves instances that only RL's rollouts reach.
		// RunID hashes 1 as left out, so configs from before it keep
		// their run id.
		Coverage float64 `yaml:"coverage" json:"coverage,omitempty"`
		// Dim and Layers size the policy the warm start creates (train
		// --dim, --layers; 0: the defaults, 64 and 2, left out of the
		// run id as before the fields).
		Dim    int `yaml:"dim" json:"dim,omitempty"`
		Layers int `yaml:"layers" json:"layers,omitempty"`
		// Dropout is the warm start's dropout probability (train
		// --dropout). Default 0, left out of the run id, so the default
		// config names its run from before the field: with every task
		// demonstrated, 400 steps see each segment a third as often, and
		// dropout 0.1 lowered the warm start's held-out success
		// (grpo-dropout.yaml). make demo (a quarter demonstrated) sets
		// 0.1, train's own default.
		Dropout float64 `yaml:"dropout" json:"dropout,omitempty"`
		// CoverBy orders coverage's pick of each family (rollout
		// --cover-by): family (the default, left out of the run id: the seed's
		// first tasks) or template (one task of each oracle template
		// before a second of any: demonstrations of every way the family
		// is solved that the budget allows).
		CoverBy string `yaml:"cover_by" json:"cover_by,omitempty"`
	} `yaml:"warmstart" json:"warmstart"`

	InitialPass struct {
		N int `yaml:"n" json:"n"` // rollouts per task before RL (sets the EMAs, filters the pool)
	} `yaml:"initial_pass" json:"initial_pass"`

	Sample struct {
		Sampler string  `yaml:"sampler" json:"sampler"` // frontier, dtac, uniform, curriculum, dapo
		Batch   int     `yaml:"batch" json:"batch"`
		Alpha   float64 `yaml:"alpha" json:"alpha"` // ScaleCUA's EMA alpha: every sampler but dtac
		// EMABeta is EvoCUA-1.5's EMA beta (eq. 16), the one dtac uses.
		EMABeta float64 `yaml:"ema_beta" json:"ema_beta"`
		// ICSRatio is dtac's rho_inf: floor(ics_ratio * batch) infeasible
		// tasks per batch (0.025 draws none below a batch of 40).
		ICSRatio  float64 `yaml:"ics_ratio" json:"ics_ratio"`
		ReplayCap int     `yaml:"replay_cap" json:"replay_cap"` // dtac: replays per buffered group
		// RecalibrateEvery R: after the train step of every R-th iteration,
		// the tasks filtered out of the pool get RecalibrateN rollouts; the
		// next sample lets those inside [p_min, p_max] back in (0: never).
		RecalibrateEvery int `yaml:"recalibrate_every" json:"recalibrate_every"`
		RecalibrateN     int `yaml:"recalibrate_n" json:"recalibrate_n"`
		// DAPORefills bounds dapo's refill rounds per iteration: after the
		// rollout, while fewer than batch groups have differing rewards,
		// draw and roll out more tasks (each round a step; a no-op once full).
		DAPORefills int     `yaml:"dapo_refills" json:"dapo_refills"`
		PMin        float64 `yaml:"p_min" json:"p_min"`
		PMax        float64 `yaml:"p_max" json:"p_max"`
	} `yaml:"sample" json:"sample"`

	Rollout struct {
		N        int `yaml:"n" json:"n"` // group size
		MaxTurns int `yaml:"max_turns" json:"max_turns"`
		// TreeOnly would skip screenshots; it served the encoder-decoder
		// (removed after 7878f89), which read the accessibility tree only.
		// The causal policy reads pixels, so Validate refuses it; the field
		// stays so an old config gets that error rather than a silent
		// change. (rollout --tree-only itself remains, for oracle runs.)
		TreeOnly bool `yaml:"tree_only" json:"tree_only"`
		// Reward is the training rollouts' reward source: judge, verifier
		// or both ("": the rollout stage's default, DefaultReward).
		Reward string `yaml:"reward" json:"reward,omitempty"`
		// Redraws is how many more responses the policy draws in a turn
		// whose response is no action on the screen (rollout --redraws),
		// in every rollout of the checkpoint, evaluation included.
		Redraws int `yaml:"redraws" json:"redraws"`
	} `yaml:"rollout" json:"rollout"`

	Segment struct {
		Mode  string `yaml:"mode" json:"mode"`
		K     int    `yaml:"k" json:"k"`
		Delta int    `yaml:"delta" json:"delta"`
	} `yaml:"segment" json:"segment"`

	Train struct {
		Advantage string  `yaml:"advantage" json:"advantage"` // grpo, stepo, naive
		Steps     int     `yaml:"steps" json:"steps"`         // optimiser steps per iteration
		LR        float64 `yaml:"lr" json:"lr"`
		// MaxStale drops groups rolled out by a policy more than this many
		// versions older than the one trained (EvoCUA-1.5 5.2: 3).
		MaxStale int `yaml:"max_stale" json:"max_stale"`
		// MiniGroups > 0 makes every mini-batch exactly this many whole
		// rollout groups (EvoCUA-1.5 5.4); 0 packs whole groups up to 32 items.
		MiniGroups int `yaml:"mini_groups" json:"mini_groups"`
	} `yaml:"train" json:"train"`

	// RFT: the first RFT.Iterations RL iterations are rejection-sampling
	// fine-tuning rounds instead of GRPO (RFTConfig).
	RFT RFTConfig `yaml:"rft" json:"rft,omitzero"`

	Eval struct {
		N     int    `yaml:"n" json:"n"` // rollouts per held-out task per evaluation
		Split string `yaml:"split" json:"split"`
	} `yaml:"eval" json:"eval"`

	Audits    []string `yaml:"audits" json:"audits"`
	Notebooks []string `yaml:"notebooks" json:"notebooks"`
}

// RFTConfig makes the first Iterations of the RL iterations rounds of
// rejection-sampling fine-tuning (train --objective rft: the newest
// checkpoint imitates the demonstrations and the policy's verified
// successes, at most PerTask per task, with the warm start's loss) instead
// of GRPO. Round 1 imitates the initial pass; each later round first rolls
// the policy out N times on every training task. Off (Iterations 0), RunID
// hashes it as left out, so configs from before it keep their run id.
type RFTConfig struct {
	Iterations int     `yaml:"iterations" json:"iterations"`
	N          int     `yaml:"n" json:"n"`
	Steps      int     `yaml:"steps" json:"steps"`
	LR         float64 `yaml:"lr" json:"lr"`
	PerTask    int     `yaml:"per_task" json:"per_task"`
	// Imitate is both, successes or demos (train --imitate): the last two
	// are the controls for where a round's gain comes from.
	Imitate string `yaml:"imitate" json:"imitate,omitempty"`
	// Pick is random or shortest (train --pick): which of a task's
	// successes a round keeps when it has more than PerTask.
	Pick string `yaml:"pick" json:"pick,omitempty"`
	// Pass is all (each pass rolls out every training task) or unsolved
	// (rollout --unsolved: only the tasks with no verified success yet; a
	// round imitates at most PerTask successes per task, and a solved task
	// keeps the ones it has).
	Pass string `yaml:"pass" json:"pass,omitempty"`
	// Dropout is each round's dropout probability (train --dropout;
	// default 0, left out of the run id; make demo sets 0.1).
	Dropout float64 `yaml:"dropout" json:"dropout,omitempty"`
	// Augment is how many tasks trajectory-guided synthesis (synthesize
	// --from-trajectories: failed training tasks split at the sub-goal
	// where rollouts deviated, solved ones composed) adds to the training
	// pool before each pass after round 1, so that the pass can find
	// successes on simpler variants of the tasks it fails (ScaleCUA's
	// trajectory-guided task augmentation, appendix B.5). 0: off, left
	// out of the run id.
	Augment int `yaml:"augment" json:"augment,omitempty"`
	// Restart makes each round train fresh weights on what it imitates
	// (train --restart: STaR's restart from the initial model) instead of
	// continuing the newest checkpoint; false: continue, left out of the
	// run id.
	Restart bool `yaml:"restart" json:"restart,omitempty"`
	// Balance is none or actions (train --balance): actions draws a
	// round's items so that each distinct action sequence gets an equal
	// share of its steps; none, left out of the run id.
	Balance string `yaml:"balance" json:"balance,omitempty"`
}

// Default returns the demo configuration.
func Default() Config {
	var c Config
	c.Seed, c.Iterations, c.Workers, c.Report, c.Policy = 1, 4, 2, "out/report.html", "causal"
	c.Synthesize.Count, c.Synthesize.Backend = 30, "builtin"
	c.Warmstart.Demos, c.Warmstart.Steps, c.Warmstart.LR, c.Warmstart.MaxTurns, c.Warmstart.Batch = 1, 400, 1e-2, 40, 8
	c.Warmstart.Coverage = 1
	c.Warmstart.CoverBy = "family"
	c.InitialPass.N = 2
	c.Sample.Sampler, c.Sample.Batch, c.Sample.Alpha, c.Sample.PMin, c.Sample.PMax = "frontier", 16, 0.2, 0.1, 0.9
	c.Sample.EMABeta, c.Sample.ICSRatio, c.Sample.ReplayCap = 0.7, 0.025, 3
	c.Sample.RecalibrateEvery, c.Sample.RecalibrateN, c.Sample.DAPORefills = 2, 4, 2
	c.Train.MaxStale = 3
	c.Rollout.N, c.Rollout.MaxTurns, c.Rollout.Redraws = 8, 30, DefaultRedraws
	c.Segment.Mode, c.Segment.K, c.Segment.Delta = "window", 5, 5
	c.Train.Advantage, c.Train.Steps, c.Train.LR = "grpo", 30, 1e-4
	c.Eval.N, c.Eval.Split = 1, "heldout"
	c.RFT.N, c.RFT.Steps, c.RFT.LR, c.RFT.PerTask, c.RFT.Imitate, c.RFT.Pick, c.RFT.Pass, c.RFT.Balance = 8, 400, 1e-2, 1, "both", "random", "all", "none"
	c.Audits = []string{"health", "synthesis", "overlap"}
	c.Notebooks = []string{"notebooks/rollout-health.md", "notebooks/frontier.md", "notebooks/segments.md"}
	return c
}

// Load reads a YAML config over the defaults; unknown keys are errors, so
// a typo never silently falls back to a default.
func Load(path string) (Config, error) {
	c := Default()
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if err := DecodeYAML(b, &c, true); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, c.Validate()
}

// Validate checks the config's domains.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, a ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	check(c.Iterations >= 0, "iterations is %d, want >= 0", c.Iterations)
	check(c.Workers >= 1 && c.Workers <= MaxWorkers, "workers is %d, want 1..%d", c.Workers, MaxWorkers)
	check(c.Rollout.N >= 2, "rollout.n is %d, want >= 2 (a group needs two rollouts for an advantage)", c.Rollout.N)
	check(c.Rollout.MaxTurns >= 1, "rollout.max_turns is %d, want >= 1", c.Rollout.MaxTurns)
	check(c.Rollout.Redraws >= 0, "rollout.redraws is %d, want >= 0", c.Rollout.Redraws)
	check(c.Sample.Batch >= 1, "sample.batch is %d, want >= 1", c.Sample.Batch)
	check(c.Sample.Alpha > 0 && c.Sample.Alpha <= 1, "sample.alpha is %v, want (0, 1]", c.Sample.Alpha)
	check(c.Sample.EMABeta >= 0 && c.Sample.EMABeta < 1, "sample.ema_beta is %v, want [0, 1)", c.Sample.EMABeta)
	check(c.Sample.ICSRatio >= 0 && c.Sample.ICSRatio <= 1, "sample.ics_ratio is %v, want [0, 1]", c.Sample.ICSRatio)
	check(c.Sample.ReplayCap >= 1, "sample.replay_cap is %d, want >= 1", c.Sample.ReplayCap)
	check(c.Sample.RecalibrateEvery >= 0, "sample.recalibrate_every is %d, want >= 0", c.Sample.RecalibrateEvery)
	check(c.Sample.RecalibrateEvery == 0 || c.Sample.RecalibrateN >= 1, "sample.recalibrate_n is %d, want >= 1", c.Sample.RecalibrateN)
	check(c.Sample.DAPORefills >= 0, "sample.dapo_refills is %d, want >= 0", c.Sample.DAPORefills)
	check(c.Train.MaxStale >= 0, "train.max_stale is %d, want >= 0", c.Train.MaxStale)
	check(c.Train.MiniGroups >= 0, "train.mini_groups is %d, want >= 0", c.Train.MiniGroups)
	check(c.Warmstart.Demos >= 1, "warmstart.demos is %d, want >= 1", c.Warmstart.Demos)
	check(c.InitialPass.N >= 1, "initial_pass.n is %d, want >= 1", c.InitialPass.N)
	check(c.Eval.N >= 1, "eval.n is %d, want >= 1", c.Eval.N)
	switch c.Sample.Sampler {
	case "frontier", "dtac", "uniform", "curriculum", "dapo":
	default:
		errs = append(errs, fmt.Errorf("sample.sampler is %q, want frontier, dtac, uniform, curriculum or dapo", c.Sample.Sampler))
	}
	switch c.Policy {
	case "causal":
	case "encdec":
		errs = append(errs, ErrEncDecRemoved)
	default:
		errs = append(errs, fmt.Errorf("policy is %q, want causal", c.Policy))
	}
	check(!c.Rollout.TreeOnly, "rollout.tree_only: the causal policy reads screenshots, so its rollouts record them (tree-only rollouts served the encoder-decoder, removed after commit 7878f89); delete the setting")
	switch c.Rollout.Reward {
	case "", DefaultReward, "verifier", "both":
	default:
		errs = append(errs, fmt.Errorf("rollout.reward is %q, want judge, verifier or both", c.Rollout.Reward))
	}
	for _, r := range c.Synthesize.Without {
		switch r {
		case "judger", "fixer", "rule-validator":
		default:
			errs = append(errs, fmt.Errorf("synthesize.without holds %q, want judger, fixer or rule-validator", r))
		}
	}
	check(c.Warmstart.Batch >= 0, "warmstart.batch is %d, want >= 0", c.Warmstart.Batch)
	check(c.Warmstart.Coverage > 0 && c.Warmstart.Coverage <= 1, "warmstart.coverage is %v, want a fraction in (0, 1] (1: every training task)", c.Warmstart.Coverage)
	switch c.Warmstart.CoverBy {
	case "family":
	case "template":
		check(c.Warmstart.Coverage < 1, "warmstart.cover_by is template, but warmstart.coverage is 1 (every training task is demonstrated); set a coverage below 1")
	default:
		errs = append(errs, fmt.Errorf("warmstart.cover_by is %q, want family or template", c.Warmstart.CoverBy))
	}
	switch c.Train.Advantage {
	case "grpo", "stepo", "naive":
	default:
		errs = append(errs, fmt.Errorf("train.advantage is %q, want grpo, stepo or naive", c.Train.Advantage))
	}
	// The train stage reads 0 steps or a 0 rate as "its default" (flags not
	// given), so a written 0 would silently run 30 or 400 steps: refuse it.
	check(c.Train.Steps >= 1, "train.steps is %d, want >= 1", c.Train.Steps)
	check(positive(c.Train.LR), "train.lr is %v, want a finite number > 0", c.Train.LR)
	check(c.RFT.Iterations >= 0 && c.RFT.Iterations <= c.Iterations, "rft.iterations is %d, want 0..iterations (%d): the first RL iterations are RFT rounds", c.RFT.Iterations, c.Iterations)
	if c.RFT.Iterations > 0 {
		check(c.RFT.N >= 1, "rft.n is %d, want >= 1", c.RFT.N)
		check(c.RFT.Steps >= 1, "rft.steps is %d, want >= 1", c.RFT.Steps)
		check(c.RFT.Dropout >= 0 && c.RFT.Dropout < 1, "rft.dropout is %v, want a probability in [0, 1)", c.RFT.Dropout)
		check(positive(c.RFT.LR), "rft.lr is %v, want a finite number > 0", c.RFT.LR)
		check(c.RFT.PerTask >= 0, "rft.per_task is %d, want >= 0 (0: every success)", c.RFT.PerTask)
		check(c.RFT.Imitate == "both" || c.RFT.Imitate == "successes" || c.RFT.Imitate == "demos",
			"rft.imitate is %q, want both, successes or demos", c.RFT.Imitate)
		check(c.RFT.Pick == "random" || c.RFT.Pick == "shortest", "rft.pick is %q, want random or shortest", c.RFT.Pick)
		check(c.RFT.Balance == "none" || c.RFT.Balance == "actions", "rft.balance is %q, want none or actions", c.RFT.Balance)
		check(c.RFT.Pass == "all" || c.RFT.Pass == "unsolved", "rft.pass is %q, want all or unsolved", c.RFT.Pass)
		check(c.RFT.Augment >= 0, "rft.augment is %d, want >= 0 (0: off)", c.RFT.Augment)
		check(c.RFT.Augment == 0 || c.RFT.Iterations >= 2,
			"rft.augment is %d with rft.iterations %d: tasks are synthesized before the passes of rounds 2 and later, so it needs rft.iterations >= 2", c.RFT.Augment, c.RFT.Iterations)
	}
	check(c.Warmstart.Dropout >= 0 && c.Warmstart.Dropout < 1, "warmstart.dropout is %v, want a probability in [0, 1)", c.Warmstart.Dropout)
	check(c.Warmstart.Dim >= 0 && c.Warmstart.Dim%4 == 0, "warmstart.dim is %d, want a multiple of 4 (0: the default, 64)", c.Warmstart.Dim)
	check(c.Warmstart.Layers >= 0 && c.Warmstart.Layers <= 32, "warmstart.layers is %d, want 0..32 (0: the default, 2)", c.Warmstart.Layers)
	check(c.Warmstart.Steps >= 1, "warmstart.steps is %d, want >= 1", c.Warmstart.Steps)
	check(positive(c.Warmstart.LR), "warmstart.lr is %v, want a finite number > 0", c.Warmstart.LR)
	check(c.Warmstart.MaxTurns >= 1, "warmstart.max_turns is %d, want >= 1", c.Warmstart.MaxTurns)
	// The sample stage's own rule (sample.EMAParams.Validate), which every
	// sampler runs; NaN fails it too.
	check(c.Sample.PMin >= 0 && c.Sample.PMin <= c.Sample.PMax && c.Sample.PMax <= 1,
		"sample.p_min and sample.p_max are %v and %v, want 0 <= p_min <= p_max <= 1", c.Sample.PMin, c.Sample.PMax)
	switch c.Segment.Mode {
	case "trajectory", "step", "window":
	default:
		errs = append(errs, fmt.Errorf("segment.mode is %q, want trajectory, step or window", c.Segment.Mode))
	}
	// Every rollout and segment step takes --k and --delta whatever the
	// mode. A window of K + Delta screenshots must fit the causal model's
	// context, which also keeps their sum from overflowing.
	check(c.Segment.K >= 1 && c.Segment.K <= MaxWindow, "segment.k is %d, want 1..%d", c.Segment.K, MaxWindow)
	check(c.Segment.Delta >= 1 && c.Segment.Delta <= MaxWindow, "segment.delta is %d, want 1..%d", c.Segment.Delta, MaxWindow)
	if c.Segment.K >= 1 && c.Segment.K <= MaxWindow && c.Segment.Delta >= 1 && c.Segment.Delta <= MaxWindow {
		check(c.Segment.K+c.Segment.Delta <= MaxWindow, "segment.k + segment.delta is %d, want <= %d (a window of K + Delta screenshots fits the causal model's %d-token context)",
			c.Segment.K+c.Segment.Delta, MaxWindow, CausalMaxContext)
	}
	check(c.Synthesize.Count >= 0, "synthesize.count is %d, want >= 0 (0 skips synthesis)", c.Synthesize.Count)
	check(c.LimitTasks >= 0, "limit_tasks is %d, want >= 0 (0: the whole pool)", c.LimitTasks)
	switch c.Synthesize.Backend {
	case "builtin", "openai": // the synthesize stage's backends
	default:
		errs = append(errs, fmt.Errorf("synthesize.backend is %q, want builtin or openai", c.Synthesize.Backend))
	}
	switch c.Eval.Split {
	case "train", "heldout": // the task splits rollout --split selects
	default:
		errs = append(errs, fmt.Errorf("eval.split is %q, want heldout or train", c.Eval.Split))
	}
	seen := map[string]bool{}
	for _, a := range c.Audits {
		switch {
		case a == "judges":
			// audit judges needs --labels (human labels), which the loop
			// has none of: it would fail at the run's last step.
			errs = append(errs, fmt.Errorf("audits holds %q: the judges audit needs human labels; run cualake audit judges --labels FILE after the loop", a))
		case !slices.Contains(LoopAudits, a):
			errs = append(errs, fmt.Errorf("audits holds %q, want %s", a, strings.Join(LoopAudits, ", ")))
		case seen[a]:
			// Each audit is a step keyed audit-<kind>; twice is one key twice.
			errs = append(errs, fmt.Errorf("audits holds %q twice", a))
		}
		seen[a] = true
	}
	return errors.Join(errs...)
}

// MaxWorkers bounds workers as the stages bound their --workers flag.
const MaxWorkers = 1024

// LoopAudits are the audit kinds a loop config may list: every kind of
// the audit stage (pipeline/audit.Kinds) but judges, which needs labels.
var LoopAudits = []string{"overlap", "verifier", "synthesis", "health"}

// CausalMaxContext is the causal policy's context in tokens
// (trainer/causal.DefaultConfig's MaxContext).
const CausalMaxContext = 8192

// MaxWindow bounds segment.k + segment.delta: the most screenshots of
// CausalImageTokens tokens each that the causal model's context holds.
const MaxWindow = CausalMaxContext / CausalImageTokens

// positive reports whether f is a finite number > 0 (NaN is not).
func positive(f float64) bool { return f > 0 && !math.IsInf(f, 1) }
