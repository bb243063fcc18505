package schemas

// ExperimentRun says which experiment, variant and seed a lake branch
// belongs to. It is the first commit on each variant branch (stage
// "experiment"), so the branch's lineage names its experiment.
type ExperimentRun struct {
	Experiment     string `parquet:"experiment" json:"experiment"`
	Variant        string `parquet:"variant" json:"variant"`
	Seed           int64  `parquet:"seed" json:"seed"`
	Branch         string `parquet:"branch" json:"branch"`
	PrefixBranch   string `parquet:"prefix_branch" json:"prefix_branch"`     // where the shared prefix was committed
	PrefixSnapshot string `parquet:"prefix_snapshot" json:"prefix_snapshot"` // the snapshot the branch forked from
	Overrides      string `parquet:"overrides" json:"overrides"`             // JSON: the variant's dotted keys and values
	Config         string `parquet:"config" json:"config"`                   // JSON: the whole loop config it runs
	RunID          string `parquet:"run_id" json:"run_id"`                   // loop.RunID of that config
}

// ExperimentRuns holds a variant branch's identity (one row on each).
var ExperimentRuns = register(&Table[ExperimentRun]{
	Name: "experiment_runs", Version: 1, Key: []string{"experiment", "variant", "seed"},
	Doc:   "one row on each experiment branch: its experiment, variant, seed, overrides, config and the prefix it forked from",
	KeyOf: func(r *ExperimentRun) string { return r.Experiment + "/" + r.Variant + "/" + pad(r.Seed) },
	Less: func(a, b *ExperimentRun) bool {
		if a.Experiment != b.Experiment {
			return a.Experiment < b.Experiment
		}
		if a.Variant != b.Variant {
			return a.Variant < b.Variant
		}
		return a.Seed < b.Seed
	},
	Validate: func(r *ExperimentRun) error {
		return firstErr(required("experiment", r.Experiment), required("variant", r.Variant), required("branch", r.Branch),
			required("prefix_snapshot", r.PrefixSnapshot), validJSON("overrides", r.Overrides, false), validJSON("config", r.Config, false))
	},
})

// ExperimentResult is one iteration of one experiment branch, read from
// the branch's head: iteration 0 is the shared prefix (held-out success
// after the warm start, the initial pass, the warm-start SFT).
type ExperimentResult struct {
	Experiment string `parquet:"experiment" json:"experiment"`
	Variant    string `parquet:"variant" json:"variant"`
	Seed       int64  `parquet:"seed" json:"seed"`
	Iteration  int32  `parquet:"iteration" json:"iteration"`
	Branch     string `parquet:"branch" json:"branch"`
	Snapshot   string `parquet:"snapshot" json:"snapshot"` // the branch head the row was read from
	// Success rates and rewards of the iteration's episodes (null where the
	// iteration has none).
	TrainSuccess      *float64 `parquet:"train_success,optional" json:"train_success"`
	HeldoutSuccess    *float64 `parquet:"heldout_success,optional" json:"heldout_success"`
	MeanReward        *float64 `parquet:"mean_reward,optional" json:"mean_reward"`
	ZeroVarianceShare *float64 `parquet:"zero_variance_share,optional" json:"zero_variance_share"` // groups whose rewards are all equal
	Items             int64    `parquet:"items" json:"items"`                                      // training items of the iteration's optimiser steps
	Tokens            int64    `parquet:"tokens" json:"tokens"`
	// Wall seconds of the iteration's train and training-rollout steps,
	// from the commit times of the lineage (1 s resolution; informational,
	// like committed_at).
	TrainSeconds   *float64 `parquet:"train_seconds,optional" json:"train_seconds"`
	RolloutSeconds *float64 `parquet:"rollout_seconds,optional" json:"rollout_seconds"`
	// ExecutableRate is the prefix's synthesis (iteration 0 only, null
	// elsewhere and without synthesis): executable candidate-rounds over
	// candidate-rounds, as audit synthesis counts it.
	ExecutableRate *float64 `parquet:"executable_rate,optional" json:"executable_rate"`
	// ReplayedGroups counts the AdaPR replays the iteration's train kept,
	// PolicyLag is the mean lag (trained version minus rollout version) of
	// its kept groups, both from train_groups (null where the iteration has
	// no GRPO train).
	ReplayedGroups *int64   `parquet:"replayed_groups,optional" json:"replayed_groups"`
	PolicyLag      *float64 `parquet:"policy_lag,optional" json:"policy_lag"`
}

// ExperimentResults holds every experiment's per-iteration numbers on the
// branch the experiment reports to (main unless --branch).
var ExperimentResults = register(&Table[ExperimentResult]{
	Name: "experiments", Version: 1, Key: []string{"experiment", "variant", "seed", "iteration"},
	Doc: "one row per experiment, variant, seed and iteration: training and held-out success, mean reward, zero-variance share, " +
		"items, tokens, train and rollout seconds, the prefix's executable synthesis rate, replayed groups, mean policy lag",
	KeyOf: func(r *ExperimentResult) string {
		return r.Experiment + "/" + r.Variant + "/" + pad(r.Seed) + "/" + pad(int64(r.Iteration))
	},
	Less: func(a, b *ExperimentResult) bool {
		if a.Experiment != b.Experiment {
			return a.Experiment < b.Experiment
		}
		if a.Variant != b.Variant {
			return a.Variant < b.Variant
		}
		if a.Seed != b.Seed {
			return a.Seed < b.Seed
		}
		return a.Iteration < b.Iteration
	},
	Validate: func(r *ExperimentResult) error {
		return firstErr(required("experiment", r.Experiment), required("variant", r.Variant), required("branch", r.Branch),
			optRate("train_success", r.TrainSuccess), optRate("heldout_success", r.HeldoutSuccess),
			optRate("zero_variance_share", r.ZeroVarianceShare), optRate("executable_rate", r.ExecutableRate), nonNegative("items", r.Items), nonNegative("tokens", r.Tokens))
	},
})
