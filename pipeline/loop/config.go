// Package loop runs the whole RL loop as a sequence of stage commits:
// seed pool, synthesis, warm start, the initial pass, then iterations of
// sample, rollout, segment and train, evaluation and audits. Each step is a
// stage command with arguments from the config; progress lives in the lake
// (one tag per finished step), so a killed run resumes where it stopped.
package loop

import (
	"errors"
	"fmt"
	"os"

	"github.com/goccy/go-yaml"
)

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
	// Policy is the model: encdec (trainer/policy, the default: featurized
	// step items from the steps table, rollouts without screenshots) or
	// causal (trainer/causal: rollouts render screenshots, record their
	// prompt ids, and every stage after rollout reads the segments rows;
	// examples/pipeline-causal.yaml).
	Policy string `yaml:"policy" json:"policy"`

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
	} `yaml:"warmstart" json:"warmstart"`

	InitialPass struct {
		N int `yaml:"n" json:"n"` // rollouts per task before RL (sets the EMAs, filters the pool)
	} `yaml:"initial_pass" json:"initial_pass"`

	Sample struct {
		Sampler string  `yaml:"sampler" json:"sampler"` // frontier, dtac, uniform, curriculum, dapo
		Batch   int     `yaml:"batch" json:"batch"`
		Alpha   float64 `yaml:"alpha" json:"alpha"`
		PMin    float64 `yaml:"p_min" json:"p_min"`
		PMax    float64 `yaml:"p_max" json:"p_max"`
	} `yaml:"sample" json:"sample"`

	Rollout struct {
		N        int `yaml:"n" json:"n"` // group size
		MaxTurns int `yaml:"max_turns" json:"max_turns"`
		// Reward is the training rollouts' reward source: judge, verifier
		// or both ("": the rollout stage's default, judge).
		Reward string `yaml:"reward" json:"reward,omitempty"`
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
	} `yaml:"train" json:"train"`

	Eval struct {
		N     int    `yaml:"n" json:"n"` // rollouts per held-out task per evaluation
		Split string `yaml:"split" json:"split"`
	} `yaml:"eval" json:"eval"`

	Audits    []string `yaml:"audits" json:"audits"`
	Notebooks []string `yaml:"notebooks" json:"notebooks"`
}

// Default returns the demo configuration.
func Default() Config {
	var c Config
	c.Seed, c.Iterations, c.Workers, c.Report, c.Policy = 1, 4, 2, "out/report.html", "encdec"
	c.Synthesize.Count, c.Synthesize.Backend = 30, "builtin"
	c.Warmstart.Demos, c.Warmstart.Steps, c.Warmstart.LR, c.Warmstart.MaxTurns = 1, 600, 1e-2, 40
	c.InitialPass.N = 4
	c.Sample.Sampler, c.Sample.Batch, c.Sample.Alpha, c.Sample.PMin, c.Sample.PMax = "frontier", 32, 0.2, 0.1, 0.9
	c.Rollout.N, c.Rollout.MaxTurns = 8, 30
	c.Segment.Mode, c.Segment.K, c.Segment.Delta = "window", 5, 5
	c.Train.Advantage, c.Train.Steps, c.Train.LR = "grpo", 30, 1e-3
	c.Eval.N, c.Eval.Split = 1, "heldout"
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
	if err := yaml.UnmarshalWithOptions(b, &c, yaml.Strict()); err != nil {
		return c, fmt.Errorf("config %s: %s", path, yaml.FormatError(err, false, true))
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
	check(c.Workers >= 1, "workers is %d, want >= 1", c.Workers)
	check(c.Rollout.N >= 2, "rollout.n is %d, want >= 2 (a group needs two rollouts for an advantage)", c.Rollout.N)
	check(c.Rollout.MaxTurns >= 1, "rollout.max_turns is %d, want >= 1", c.Rollout.MaxTurns)
	check(c.Sample.Batch >= 1, "sample.batch is %d, want >= 1", c.Sample.Batch)
	check(c.Warmstart.Demos >= 1, "warmstart.demos is %d, want >= 1", c.Warmstart.Demos)
	check(c.InitialPass.N >= 1, "initial_pass.n is %d, want >= 1", c.InitialPass.N)
	check(c.Eval.N >= 1, "eval.n is %d, want >= 1", c.Eval.N)
	switch c.Sample.Sampler {
	case "frontier", "dtac", "uniform", "curriculum", "dapo":
	default:
		errs = append(errs, fmt.Errorf("sample.sampler is %q, want frontier, dtac, uniform, curriculum or dapo", c.Sample.Sampler))
	}
	switch c.Policy {
	case "encdec", "causal":
	default:
		errs = append(errs, fmt.Errorf("policy is %q, want encdec or causal", c.Policy))
	}
	switch c.Rollout.Reward {
	case "", "judge", "verifier", "both":
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
	switch c.Train.Advantage {
	case "grpo", "stepo", "naive":
	default:
		errs = append(errs, fmt.Errorf("train.advantage is %q, want grpo, stepo or naive", c.Train.Advantage))
	}
	return errors.Join(errs...)
}
