package schemas

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

func jsonValid(s string) bool { return json.Valid([]byte(s)) }

// pad makes integers sort correctly inside string keys.
func pad(n int64) string { return fmt.Sprintf("%012d", n) }

// Task sources.
const (
	SourceSeed        = "seed"
	SourceSynthesized = "synthesized"
	SourceSplit       = "split"
	SourceComposed    = "composed"
	SourceImported    = "imported"
)

// Task is one task of the pool: an instruction, the setup that prepares the
// environment and the declarative judge that scores the final state.
type Task struct {
	TaskID        string   `parquet:"task_id"`
	Domain        string   `parquet:"domain"`
	App           string   `parquet:"app"`
	Instruction   string   `parquet:"instruction"`
	Setup         string   `parquet:"setup"` // JSON list of setup steps {type, parameters}
	Judge         string   `parquet:"judge"` // JSON evaluator spec (func, result, expected, options, conj)
	Feasible      bool     `parquet:"feasible"`
	Abilities     []string `parquet:"abilities,list"`
	Source        string   `parquet:"source"`
	ParentTaskIDs []string `parquet:"parent_task_ids,list"`
	Origin        string   `parquet:"origin"`     // the knowledge document, trajectory or file it came from
	Split         string   `parquet:"split"`      // train, heldout, or "" when the pool is not split
	Difficulty    int32    `parquet:"difficulty"` // expected steps of a solution; 0 when unknown
	Raw           string   `parquet:"raw"`        // the original task JSON, byte-exact, for imported tasks
}

// Tasks is the task pool.
var Tasks = register(&Table[Task]{
	Name: "tasks", Version: 1, Key: []string{"task_id"}, Partition: "domain",
	Doc:   "one row per task: instruction, setup steps and declarative judge",
	KeyOf: func(r *Task) string { return r.TaskID },
	Less:  func(a, b *Task) bool { return a.TaskID < b.TaskID },
	Validate: func(r *Task) error {
		return firstErr(required("task_id", r.TaskID), required("domain", r.Domain),
			oneOf("source", r.Source, SourceSeed, SourceSynthesized, SourceSplit, SourceComposed, SourceImported),
			oneOf("split", r.Split, "", "train", "heldout"),
			validJSON("setup", r.Setup, false), validJSON("judge", r.Judge, false),
			nonNegative("difficulty", int64(r.Difficulty)))
	},
})

// Synthesis is one candidate task in one round of the synthesis loop, with
// what every role said about it.
type Synthesis struct {
	CandidateID         string `parquet:"candidate_id"`
	Round               int32  `parquet:"round"`
	TaskID              string `parquet:"task_id"` // the id the candidate would get (and gets, if accepted)
	Config              string `parquet:"config"`  // role configuration, e.g. "builtin" or "without-judger"
	Origin              string `parquet:"origin"`  // knowledge document or parent trajectory
	Method              string `parquet:"method"`  // synthesized, split, composed
	Candidate           string `parquet:"candidate"`
	RuleValid           bool   `parquet:"rule_valid"`
	RuleReason          string `parquet:"rule_reason"`
	JudgerVerdict       string `parquet:"judger_verdict"` // accept, reject, skipped
	JudgerReason        string `parquet:"judger_reason"`
	CheckerReachable    bool   `parquet:"checker_reachable"`
	CheckerJudgeCorrect bool   `parquet:"checker_judge_correct"`
	CheckerReason       string `parquet:"checker_reason"`
	Executable          bool   `parquet:"executable"` // the judge ran and behaved in the dry run
	Fixes               string `parquet:"fixes"`      // JSON list of fixes applied before this round
	Accepted            bool   `parquet:"accepted"`
	Dropped             string `parquet:"dropped"` // why a candidate left the loop without acceptance ("duplicate", "max-rounds", ...)
	Tokens              int64  `parquet:"tokens"`
	Calls               int32  `parquet:"calls"`
}

// SynthesisNotValidated begins the rule_reason of a synthesis row that no
// role validated: a candidate dropped as a duplicate before the loop. Such
// a row is neither executable nor not, so rates leave it out.
const SynthesisNotValidated = "not validated: "

// SynthesisValidatedSQL is the SQL condition on the synthesis table that
// keeps the rows some role validated (every row but those above); the
// synthesis audit and the experiments table count rates over these rows,
// as the synthesize stage's summary does.
const SynthesisValidatedSQL = "NOT starts_with(rule_reason, '" + SynthesisNotValidated + "')"

// SynthesisRecords holds every candidate and round of the synthesize stage.
var SynthesisRecords = register(&Table[Synthesis]{
	Name: "synthesis", Version: 1, Key: []string{"candidate_id", "round"},
	Doc:   "one row per synthesized candidate and round: each role's verdict, fixes, acceptance and cost",
	KeyOf: func(r *Synthesis) string { return r.CandidateID + "/" + pad(int64(r.Round)) },
	Less: func(a, b *Synthesis) bool {
		if a.CandidateID != b.CandidateID {
			return a.CandidateID < b.CandidateID
		}
		return a.Round < b.Round
	},
	Validate: func(r *Synthesis) error {
		return firstErr(required("candidate_id", r.CandidateID), nonNegative("round", int64(r.Round)),
			oneOf("judger_verdict", r.JudgerVerdict, "accept", "reject", "skipped"),
			oneOf("method", r.Method, SourceSynthesized, SourceSplit, SourceComposed),
			validJSON("candidate", r.Candidate, false), validJSON("fixes", r.Fixes, false),
			nonNegative("tokens", r.Tokens), nonNegative("calls", int64(r.Calls)))
	},
})

// Trajectory outcomes.
const (
	OutcomeSuccess            = "success"
	OutcomeFailure            = "failure"
	OutcomeIncomplete         = "incomplete"
	OutcomeError              = "error"
	OutcomeReportedInfeasible = "reported_infeasible"
)

// Trajectory is one episode of a policy on a task.
type Trajectory struct {
	TrajectoryID  string  `parquet:"trajectory_id"`
	TaskID        string  `parquet:"task_id"`
	Domain        string  `parquet:"domain"`
	GroupID       string  `parquet:"group_id"` // the rollout group (same task, same iteration)
	Policy        string  `parquet:"policy"`   // random, oracle, checkpoint, openai:<model>, or an imported model name
	PolicyVersion int32   `parquet:"policy_version"`
	Iteration     int32   `parquet:"iteration"`
	Seed          int64   `parquet:"seed"`
	Steps         int32   `parquet:"steps"`
	Reward        float64 `parquet:"reward"`
	Outcome       string  `parquet:"outcome"`
	JudgeDetail   string  `parquet:"judge_detail"` // JSON: per-judge scores and messages
	Error         string  `parquet:"error"`        // why an episode ended in error
	Source        string  `parquet:"source"`       // rollout, osworld, jsonl
	FinalState    string  `parquet:"final_state"`  // blob hash of the saved terminal environment state ("" if none)
}

// PolicySuccess says whether t is a verified success of the policy being
// trained on a training task: a successful episode of the checkpoint
// policy from a training rollout (initial pass, RL batch, RFT pass,
// recalibration), never an evaluation episode or a demonstration. These
// are what rejection-sampling fine-tuning imitates, and a task with one is
// solved for `rollout --unsolved`.
func (t *Trajectory) PolicySuccess() bool {
	return t.Outcome == OutcomeSuccess && t.Policy == "checkpoint" && (t.Source == "rollout" || t.Source == "calibration")
}

// Trajectories holds one row per episode.
var Trajectories = register(&Table[Trajectory]{
	Name: "trajectories", Version: 1, Key: []string{"trajectory_id"}, Partition: "iteration",
	Doc:   "one row per episode: task, rollout group, policy version, reward and outcome",
	KeyOf: func(r *Trajectory) string { return r.TrajectoryID },
	Less:  func(a, b *Trajectory) bool { return a.TrajectoryID < b.TrajectoryID },
	Validate: func(r *Trajectory) error {
		return firstErr(required("trajectory_id", r.TrajectoryID), required("task_id", r.TaskID),
			required("group_id", r.GroupID),
			oneOf("outcome", r.Outcome, OutcomeSuccess, OutcomeFailure, OutcomeIncomplete, OutcomeError, OutcomeReportedInfeasible),
			finite("reward", r.Reward), nonNegative("steps", int64(r.Steps)),
			validJSON("judge_detail", r.JudgeDetail, true))
	},
})

// ActionUnknown is the kind of a response that is no action: executed as a
// no-op and stored so that it can be counted.
const ActionUnknown = "unknown"

// Action kinds of the ScaleCUA/OSWorld action space.
var ActionKinds = []string{"click", "right_click", "middle_click", "double_click", "triple_click",
	"drag", "move", "key", "hotkey", "type", "scroll", "wait", "done", "fail", ActionUnknown}

// Action is a typed GUI action. Coordinates are on the 1000x1000 grid;
// absent coordinates are nil.
type Action struct {
	Kind      string   `parquet:"action_kind"`
	X         *int32   `parquet:"x,optional"`
	Y         *int32   `parquet:"y,optional"`
	X2        *int32   `parquet:"x2,optional"` // drag target
	Y2        *int32   `parquet:"y2,optional"`
	Text      string   `parquet:"text"`
	Keys      []string `parquet:"keys,list"`
	Direction string   `parquet:"direction"` // up, down, left, right for scroll
	Amount    int32    `parquet:"amount"`
}

// Step is one executed action of a trajectory with the observation the
// policy saw before it and the tokens it produced.
type Step struct {
	TrajectoryID   string    `parquet:"trajectory_id"`
	Step           int32     `parquet:"step"`
	Sub            int32     `parquet:"sub"` // index of the action within one response (OSWorld repeats step_num)
	ActionKind     string    `parquet:"action_kind"`
	X              *int32    `parquet:"x,optional"`
	Y              *int32    `parquet:"y,optional"`
	X2             *int32    `parquet:"x2,optional"`
	Y2             *int32    `parquet:"y2,optional"`
	Text           string    `parquet:"text"`
	Keys           []string  `parquet:"keys,list"`
	Direction      string    `parquet:"direction"`
	Amount         int32     `parquet:"amount"`
	RawAction      string    `parquet:"raw_action"` // the action as the policy wrote it
	Response       string    `parquet:"response"`
	Observation    string    `parquet:"observation"` // blob hash of the screenshot seen before the action
	A11y           string    `parquet:"a11y"`        // blob hash of the accessibility tree seen before the action
	PromptTokens   int32     `parquet:"prompt_tokens"`
	ResponseTokens int32     `parquet:"response_tokens"`
	ResponseIDs    []int32   `parquet:"response_ids,list"` // token ids the policy produced (empty when not recorded)
	Logprobs       []float32 `parquet:"logprobs,list"`     // their log-probabilities (empty when not recorded)
	// PromptIDs is the turn's observation exactly as the policy's context
	// held it: the user message with the screenshot's vision tokens and the
	// screen text, in the policy tokenizer's ids (empty when not recorded).
	// The segment stage builds items from these instead of re-rendering.
	PromptIDs   []int32 `parquet:"prompt_ids,list"`
	ActionError string  `parquet:"action_error"` // why the environment treated the action as a no-op
	Reward      float64 `parquet:"reward"`
	Done        bool    `parquet:"done"`
	Info        string  `parquet:"info"`
	Timestamp   string  `parquet:"timestamp"` // as recorded by the source (imported logs); never the wall clock of a cualake run
}

// ActionOf returns the typed action of a step.
func (s *Step) ActionOf() Action {
	return Action{Kind: s.ActionKind, X: s.X, Y: s.Y, X2: s.X2, Y2: s.Y2, Text: s.Text, Keys: s.Keys, Direction: s.Direction, Amount: s.Amount}
}

// SetAction copies a typed action into the step's columns.
func (s *Step) SetAction(a Action) {
	s.ActionKind, s.X, s.Y, s.X2, s.Y2, s.Text, s.Keys, s.Direction, s.Amount = a.Kind, a.X, a.Y, a.X2, a.Y2, a.Text, a.Keys, a.Direction, a.Amount
}

// Steps holds one row per executed action.
var Steps = register(&Table[Step]{
	Name: "steps", Version: 2, Key: []string{"trajectory_id", "step", "sub"},
	Doc:   "one row per executed action: typed action, response, observation hashes, tokens",
	KeyOf: func(r *Step) string { return r.TrajectoryID + "/" + pad(int64(r.Step)) + "/" + pad(int64(r.Sub)) },
	Less: func(a, b *Step) bool {
		if a.TrajectoryID != b.TrajectoryID {
			return a.TrajectoryID < b.TrajectoryID
		}
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		return a.Sub < b.Sub
	},
	Validate: func(r *Step) error {
		if err := firstErr(required("trajectory_id", r.TrajectoryID), nonNegative("step", int64(r.Step)),
			oneOf("action_kind", r.ActionKind, ActionKinds...), finite("reward", r.Reward),
			validJSON("info", r.Info, true)); err != nil {
			return err
		}
		if len(r.Logprobs) != 0 && len(r.Logprobs) != len(r.ResponseIDs) {
			return fmt.Errorf("%w: field logprobs has %d values for %d response_ids", ErrInvalidRow, len(r.Logprobs), len(r.ResponseIDs))
		}
		for i, lp := range r.Logprobs {
			if f := float64(lp); math.IsNaN(f) || math.IsInf(f, 0) {
				return finite("logprobs["+strconv.Itoa(i)+"]", f)
			}
			if lp > 0 {
				return fmt.Errorf("%w: field logprobs[%d] is %v, want <= 0", ErrInvalidRow, i, lp)
			}
		}
		for i, id := range r.PromptIDs {
			if id < 0 {
				return fmt.Errorf("%w: field prompt_ids[%d] is %d, want >= 0", ErrInvalidRow, i, id)
			}
		}
		return nil
	},
})

// Blob is a content-addressed binary object: a screenshot, an accessibility
// tree, a saved environment state or a checkpoint.
type Blob struct {
	Hash   string `parquet:"hash"` // sha256 of Bytes, hex
	Mime   string `parquet:"mime"`
	Size   int64  `parquet:"size"`
	Width  int32  `parquet:"width"`
	Height int32  `parquet:"height"`
	Bytes  []byte `parquet:"bytes"`
}

// Blobs holds binary objects, each stored once.
var Blobs = register(&Table[Blob]{
	Name: "blobs", Version: 1, Key: []string{"hash"}, ContentAddressed: true,
	Doc:   "content-addressed binary objects (screenshots, trees, states, checkpoints), stored once",
	KeyOf: func(r *Blob) string { return r.Hash },
	Less:  func(a, b *Blob) bool { return a.Hash < b.Hash },
	Validate: func(r *Blob) error {
		if err := firstErr(required("hash", r.Hash), required("mime", r.Mime)); err != nil {
			return err
		}
		if r.Size != int64(len(r.Bytes)) {
			return fmt.Errorf("%w: field size is %d but bytes has %d", ErrInvalidRow, r.Size, len(r.Bytes))
		}
		if got := HashBytes(r.Bytes); got != r.Hash {
			return fmt.Errorf("%w: field hash is %s but the bytes hash to %s", ErrInvalidRow, r.Hash, got)
		}
		return nil
	},
})

// Segment is one training item cut from a trajectory.
type Segment struct {
	SegmentID       string    `parquet:"segment_id"`
	TrajectoryID    string    `parquet:"trajectory_id"`
	TaskID          string    `parquet:"task_id"`
	GroupID         string    `parquet:"group_id"`
	Index           int32     `parquet:"index"`
	Mode            string    `parquet:"mode"` // trajectory, step, window
	InputIDs        []int32   `parquet:"input_ids,list"`
	LossMask        []int8    `parquet:"loss_mask,list"` // 1 where the token is trained
	Logprobs        []float32 `parquet:"logprobs,list"`  // rollout log-probability per token (0 where mask is 0)
	HasLogprobs     bool      `parquet:"has_logprobs"`   // false when the rollout recorded none (imported logs)
	Images          int32     `parquet:"images"`
	ImageBlobs      []string  `parquet:"image_blobs,list"` // the screenshot blob of each vision block, in order ("" where none was recorded; empty for rows written without)
	Tokens          int32     `parquet:"tokens"`
	ImageTokens     int32     `parquet:"image_tokens"`
	TrainableTokens int32     `parquet:"trainable_tokens"`
	FirstStep       int32     `parquet:"first_step"` // first turn whose response is trained here
	LastStep        int32     `parquet:"last_step"`
	TrajectorySteps int32     `parquet:"trajectory_steps"`
	Reward          float64   `parquet:"reward"`
	Advantage       float64   `parquet:"advantage"`
	PolicyVersion   int32     `parquet:"policy_version"`
	Tokenizer       string    `parquet:"tokenizer"`
}

// Segments holds the training items of the latest segment run.
var Segments = register(&Table[Segment]{
	Name: "segments", Version: 2, Key: []string{"trajectory_id", "index"},
	Doc:   "one row per training item: token ids, loss mask, rollout log-probabilities, reward and advantage",
	KeyOf: func(r *Segment) string { return r.TrajectoryID + "/" + pad(int64(r.Index)) },
	Less: func(a, b *Segment) bool {
		if a.TrajectoryID != b.TrajectoryID {
			return a.TrajectoryID < b.TrajectoryID
		}
		return a.Index < b.Index
	},
	Validate: func(r *Segment) error {
		if err := firstErr(required("segment_id", r.SegmentID), required("trajectory_id", r.TrajectoryID),
			oneOf("mode", r.Mode, "trajectory", "step", "window"),
			finite("reward", r.Reward), finite("advantage", r.Advantage)); err != nil {
			return err
		}
		if len(r.LossMask) != len(r.InputIDs) || len(r.Logprobs) != len(r.InputIDs) {
			return fmt.Errorf("%w: fields input_ids, loss_mask and logprobs have lengths %d, %d, %d; want equal",
				ErrInvalidRow, len(r.InputIDs), len(r.LossMask), len(r.Logprobs))
		}
		trainable := int32(0)
		for i, m := range r.LossMask {
			if m != 0 && m != 1 {
				return fmt.Errorf("%w: field loss_mask[%d] is %d, want 0 or 1", ErrInvalidRow, i, m)
			}
			trainable += int32(m)
			if f := float64(r.Logprobs[i]); math.IsNaN(f) || math.IsInf(f, 0) {
				// Build the field name only on failure: this loop runs per token.
				return finite("logprobs["+strconv.Itoa(i)+"]", f)
			}
		}
		if trainable != r.TrainableTokens || int32(len(r.InputIDs)) != r.Tokens {
			return fmt.Errorf("%w: fields tokens/trainable_tokens are %d/%d but the stream has %d/%d",
				ErrInvalidRow, r.Tokens, r.TrainableTokens, len(r.InputIDs), trainable)
		}
		if len(r.ImageBlobs) != 0 && int32(len(r.ImageBlobs)) != r.Images {
			return fmt.Errorf("%w: field image_blobs names %d screenshots for %d images", ErrInvalidRow, len(r.ImageBlobs), r.Images)
		}
		return nil
	},
})

// PassRate is a task's pass-rate estimate at one iteration.
type PassRate struct {
	TaskID    string   `parquet:"task_id"`
	Iteration int32    `parquet:"iteration"`
	Rollouts  int32    `parquet:"rollouts"` // rollouts observed in this iteration
	Successes int32    `parquet:"successes"`
	Observed  *float64 `parquet:"observed,optional"` // successes / rollouts; null when not tried this iteration
	EMA       *float64 `parquet:"ema,optional"`      // null when the task was never tried
	Weight    *float64 `parquet:"weight,optional"`   // the sampler's weight; null when it has none
	InPool    bool     `parquet:"in_pool"`
	Feasible  bool     `parquet:"feasible"`
}

// PassRates holds the pass-rate history: one row per task per iteration.
var PassRates = register(&Table[PassRate]{
	Name: "pass_rates", Version: 1, Key: []string{"iteration", "task_id"}, Partition: "iteration",
	Doc:   "one row per task per iteration: rollouts, successes, observed rate, EMA, sampling weight",
	KeyOf: func(r *PassRate) string { return pad(int64(r.Iteration)) + "/" + r.TaskID },
	Less: func(a, b *PassRate) bool {
		if a.Iteration != b.Iteration {
			return a.Iteration < b.Iteration
		}
		return a.TaskID < b.TaskID
	},
	Validate: func(r *PassRate) error {
		if err := firstErr(required("task_id", r.TaskID), nonNegative("iteration", int64(r.Iteration)),
			nonNegative("rollouts", int64(r.Rollouts)), optRate("observed", r.Observed), optRate("ema", r.EMA)); err != nil {
			return err
		}
		if r.Successes < 0 || r.Successes > r.Rollouts {
			return fmt.Errorf("%w: field successes is %d for %d rollouts", ErrInvalidRow, r.Successes, r.Rollouts)
		}
		if r.Weight != nil {
			return finite("weight", *r.Weight)
		}
		return nil
	},
})

// Batch channels: why a task was picked.
var BatchChannels = []string{"frontier", "uniform", "vas", "adapr", "ics", "curriculum", "dapo"}

// Batch is one task picked for the next iteration's rollouts.
type Batch struct {
	Iteration int32   `parquet:"iteration"`
	Rank      int32   `parquet:"rank"`
	TaskID    string  `parquet:"task_id"`
	Sampler   string  `parquet:"sampler"`
	Channel   string  `parquet:"channel"`
	Weight    float64 `parquet:"weight"`
}

// Batches holds the sampled batches, one row per pick.
var Batches = register(&Table[Batch]{
	Name: "batches", Version: 1, Key: []string{"iteration", "rank"}, Partition: "iteration",
	Doc:   "one row per task picked for an iteration: sampler, channel and weight",
	KeyOf: func(r *Batch) string { return pad(int64(r.Iteration)) + "/" + pad(int64(r.Rank)) },
	Less: func(a, b *Batch) bool {
		if a.Iteration != b.Iteration {
			return a.Iteration < b.Iteration
		}
		return a.Rank < b.Rank
	},
	Validate: func(r *Batch) error {
		return firstErr(required("task_id", r.TaskID), oneOf("channel", r.Channel, BatchChannels...),
			finite("weight", r.Weight), nonNegative("rank", int64(r.Rank)))
	},
})

// Replay-buffer states (replay_buffer.state).
const (
	ReplayLive     = "live"     // in the buffer after this iteration's selection
	ReplayCapped   = "capped"   // left: replayed MaxReplays times (this row's replay was its last)
	ReplayStale    = "stale"    // left: its policy version fell out of the staleness window
	ReplayReplaced = "replaced" // left: a newer qualifying group of the same task took its place
)

// ReplayItem is one group of AdaPR's replay buffer (EvoCUA-1.5 4.2.2) as
// the sample stage of one iteration left it.
type ReplayItem struct {
	Iteration      int32    `parquet:"iteration"` // the batch iteration whose selection this row follows
	TaskID         string   `parquet:"task_id"`
	GroupID        string   `parquet:"group_id"`
	GroupIteration int32    `parquet:"group_iteration"` // the iteration whose rollouts made the group
	PolicyVersion  int32    `parquet:"policy_version"`  // the checkpoint version that rolled it out (oldest of its rollouts)
	Trajectories   []string `parquet:"trajectories,list"`
	Successes      int32    `parquet:"successes"`
	Replays        int32    `parquet:"replays"`  // replays so far, this iteration's included
	Replayed       bool     `parquet:"replayed"` // picked by this iteration's batch (channel adapr): trained without a new rollout
	State          string   `parquet:"state"`    // live, capped, stale, replaced
}

// ReplayBuffer holds AdaPR's buffer per iteration: its live groups and the
// ones that left at that iteration.
var ReplayBuffer = register(&Table[ReplayItem]{
	Name: "replay_buffer", Version: 1, Key: []string{"iteration", "task_id", "group_id"}, Partition: "iteration",
	Doc:   "AdaPR's replay buffer after each iteration's selection: task, group, its trajectories, policy version, replay count, state",
	KeyOf: func(r *ReplayItem) string { return pad(int64(r.Iteration)) + "/" + r.TaskID + "/" + r.GroupID },
	Less: func(a, b *ReplayItem) bool {
		if a.Iteration != b.Iteration {
			return a.Iteration < b.Iteration
		}
		if a.TaskID != b.TaskID {
			return a.TaskID < b.TaskID
		}
		return a.GroupID < b.GroupID
	},
	Validate: func(r *ReplayItem) error {
		if err := firstErr(required("task_id", r.TaskID), required("group_id", r.GroupID), nonNegative("iteration", int64(r.Iteration)),
			nonNegative("replays", int64(r.Replays)), oneOf("state", r.State, ReplayLive, ReplayCapped, ReplayStale, ReplayReplaced)); err != nil {
			return err
		}
		if len(r.Trajectories) == 0 {
			return fmt.Errorf("%w: field trajectories is empty", ErrInvalidRow)
		}
		return nil
	},
})

// Train-group channels (train_groups.channel).
const (
	TrainFresh  = "fresh" // rolled out for a sampled batch and not trained on before
	TrainReplay = "adapr" // an AdaPR replay of a buffered group
)

// TrainGroup is one rollout group a GRPO run considered: trained on, or
// dropped as stale.
type TrainGroup struct {
	Version       int32  `parquet:"version"` // the checkpoint version the run produced
	GroupID       string `parquet:"group_id"`
	TaskID        string `parquet:"task_id"`
	Iteration     int32  `parquet:"iteration"` // the group's rollout iteration
	Channel       string `parquet:"channel"`   // fresh or adapr
	PolicyVersion int32  `parquet:"policy_version"`
	Lag           int32  `parquet:"lag"` // trained policy's version minus policy_version
	Rollouts      int32  `parquet:"rollouts"`
	Kept          bool   `parquet:"kept"`          // false: dropped, lag > max_stale
	ZeroVariance  bool   `parquet:"zero_variance"` // every reward equal: no gradient
}

// TrainGroups holds, per GRPO run, the groups it consumed and dropped.
var TrainGroups = register(&Table[TrainGroup]{
	Name: "train_groups", Version: 1, Key: []string{"version", "group_id"},
	Doc:   "one row per rollout group a GRPO run considered: channel, policy lag, kept or dropped as stale",
	KeyOf: func(r *TrainGroup) string { return pad(int64(r.Version)) + "/" + r.GroupID },
	Less: func(a, b *TrainGroup) bool {
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.GroupID < b.GroupID
	},
	Validate: func(r *TrainGroup) error {
		return firstErr(required("group_id", r.GroupID), required("task_id", r.TaskID), oneOf("channel", r.Channel, TrainFresh, TrainReplay),
			nonNegative("lag", int64(r.Lag)), nonNegative("rollouts", int64(r.Rollouts)))
	},
})

// Verdicts shared by verifications and executable outcomes.
var Verdicts = []string{"success", "failure", "uncertain"}

// Verification is one verifier judgment of a trajectory.
type Verification struct {
	TrajectoryID      string   `parquet:"trajectory_id"`
	Strategy          string   `parquet:"strategy"` // passive, builtin, trained, openai
	TaskID            string   `parquet:"task_id"`
	Domain            string   `parquet:"domain"`
	Rounds            int32    `parquet:"rounds"`
	Criteria          string   `parquet:"criteria"` // JSON list of {criterion, status, evidence}
	ProbeUsed         bool     `parquet:"probe_used"`
	ProbeSteps        int32    `parquet:"probe_steps"`
	ProbeTokens       int32    `parquet:"probe_tokens"`
	RefusedActions    int32    `parquet:"refused_actions"`
	Evidence          []string `parquet:"evidence,list"` // blob hashes of evidence screenshots
	Verdict           string   `parquet:"verdict"`
	ExecutableOutcome string   `parquet:"executable_outcome"`
	Reward            float64  `parquet:"reward"`
}

// Verifications holds verifier judgments.
var Verifications = register(&Table[Verification]{
	Name: "verifications", Version: 1, Key: []string{"trajectory_id", "strategy"},
	Doc:   "one row per verifier judgment: criteria, probe use and cost, verdict, executable outcome, reward",
	KeyOf: func(r *Verification) string { return r.TrajectoryID + "/" + r.Strategy },
	Less: func(a, b *Verification) bool {
		if a.TrajectoryID != b.TrajectoryID {
			return a.TrajectoryID < b.TrajectoryID
		}
		return a.Strategy < b.Strategy
	},
	Validate: func(r *Verification) error {
		return firstErr(required("trajectory_id", r.TrajectoryID), required("strategy", r.Strategy),
			oneOf("verdict", r.Verdict, Verdicts...), oneOf("executable_outcome", r.ExecutableOutcome, append(Verdicts, "")...),
			validJSON("criteria", r.Criteria, false), finite("reward", r.Reward))
	},
})

// TrainMetric is what one optimiser step reported. Wall-clock figures
// (tokens per second) are printed, not stored, so data files stay
// reproducible.
type TrainMetric struct {
	Version        int32   `parquet:"version"` // the policy version this run produces
	Step           int32   `parquet:"step"`
	Objective      string  `parquet:"objective"` // sft, rft, grpo
	Advantage      string  `parquet:"advantage"` // grpo, stepo, naive, "" for sft and rft
	Loss           float64 `parquet:"loss"`
	PolicyLoss     float64 `parquet:"policy_loss"`
	KL             float64 `parquet:"kl"`
	Entropy        float64 `parquet:"entropy"`
	ClipFraction   float64 `parquet:"clip_fraction"`
	ClipLow        float64 `parquet:"clip_low"`
	ClipHigh       float64 `parquet:"clip_high"`
	GradNorm       float64 `parquet:"grad_norm"`
	AdvantageMean  float64 `parquet:"advantage_mean"`
	AdvantageStd   float64 `parquet:"advantage_std"`
	Tokens         int64   `parquet:"tokens"`
	Items          int32   `parquet:"items"`
	OldLogprobFrom string  `parquet:"old_logprob_from"` // rollout or recomputed
}

// TrainMetrics holds one row per optimiser step.
var TrainMetrics = register(&Table[TrainMetric]{
	Name: "train_metrics", Version: 1, Key: []string{"version", "step"},
	Doc:   "one row per optimiser step: losses, KL, entropy, clip fraction, grad norm, advantage stats",
	KeyOf: func(r *TrainMetric) string { return pad(int64(r.Version)) + "/" + pad(int64(r.Step)) },
	Less: func(a, b *TrainMetric) bool {
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Step < b.Step
	},
	Validate: func(r *TrainMetric) error {
		return firstErr(oneOf("objective", r.Objective, "sft", "rft", "grpo"),
			finite("loss", r.Loss), finite("policy_loss", r.PolicyLoss), finite("kl", r.KL),
			finite("entropy", r.Entropy), rate("clip_fraction", r.ClipFraction), finite("grad_norm", r.GradNorm))
	},
})

// Checkpoint is one saved policy; its bytes are a blob.
type Checkpoint struct {
	Version       int32  `parquet:"version"`
	ParentVersion int32  `parquet:"parent_version"` // -1 for a fresh model
	Objective     string `parquet:"objective"`
	Params        string `parquet:"params"`
	Blob          string `parquet:"blob"` // sha256 of the checkpoint bytes, a key of blobs
	Bytes         int64  `parquet:"bytes"`
	Iteration     int32  `parquet:"iteration"`
	Device        string `parquet:"device"`
}

// Checkpoints holds one row per saved policy version.
var Checkpoints = register(&Table[Checkpoint]{
	Name: "checkpoints", Version: 1, Key: []string{"version"},
	Doc:   "one row per policy version: parent, objective, parameters and the blob holding its weights",
	KeyOf: func(r *Checkpoint) string { return pad(int64(r.Version)) },
	Less:  func(a, b *Checkpoint) bool { return a.Version < b.Version },
	Validate: func(r *Checkpoint) error {
		return firstErr(nonNegative("version", int64(r.Version)), required("blob", r.Blob),
			oneOf("objective", r.Objective, "sft", "rft", "grpo", "average", "init"), validJSON("params", r.Params, false))
	},
})

// Audit is one metric of one audit.
type Audit struct {
	Kind      string  `parquet:"kind"` // overlap, judges, verifier, synthesis, health
	Metric    string  `parquet:"metric"`
	Group     string  `parquet:"group"` // the breakdown key (a domain, a strategy, an iteration) or "all"
	Value     float64 `parquet:"value"`
	Count     int64   `parquet:"count"`
	Params    string  `parquet:"params"`
	Breakdown string  `parquet:"breakdown"` // details, e.g. the offending pairs
}

// Audits holds audit results.
var Audits = register(&Table[Audit]{
	Name: "audits", Version: 1, Key: []string{"kind", "metric", "group"},
	Doc:   "one row per audit metric and breakdown group",
	KeyOf: func(r *Audit) string { return r.Kind + "/" + r.Metric + "/" + r.Group },
	Less: func(a, b *Audit) bool {
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Metric != b.Metric {
			return a.Metric < b.Metric
		}
		return a.Group < b.Group
	},
	Validate: func(r *Audit) error {
		return firstErr(required("kind", r.Kind), required("metric", r.Metric), finite("value", r.Value),
			validJSON("params", r.Params, false), validJSON("breakdown", r.Breakdown, true))
	},
})

// Reject is one quarantined input record.
type Reject struct {
	Stage  string `parquet:"stage"`
	Source string `parquet:"source"` // file (and for logs, the line) the record came from
	Line   int32  `parquet:"line"`
	Table  string `parquet:"table"` // the table it was meant for
	Field  string `parquet:"field"`
	Reason string `parquet:"reason"`
	Raw    string `parquet:"raw"`
}

// Rejects holds input records that failed validation, raw, with the reason.
var Rejects = register(&Table[Reject]{
	Name: "rejects", Version: 1, Key: []string{"source", "line", "field"},
	Doc:   "one row per quarantined input record: where it came from, why, and its raw bytes",
	KeyOf: func(r *Reject) string { return r.Source + "/" + pad(int64(r.Line)) + "/" + r.Field },
	Less: func(a, b *Reject) bool {
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Field < b.Field
	},
	Validate: func(r *Reject) error {
		return firstErr(required("stage", r.Stage), required("source", r.Source), required("reason", r.Reason))
	},
})

// SamplerSim is one iteration of one sampler in the sampler simulator
// (`cualake simulate samplers`).
type SamplerSim struct {
	Sampler           string  `parquet:"sampler" json:"sampler"`
	Iteration         int32   `parquet:"iteration" json:"iteration"`
	EvalReward        float64 `parquet:"eval_reward" json:"eval_reward"`
	EvalRewardSD      float64 `parquet:"eval_reward_sd" json:"eval_reward_sd"`
	ZeroVarianceShare float64 `parquet:"zero_variance_share" json:"zero_variance_share"`
	FrontierSize      float64 `parquet:"frontier_size" json:"frontier_size"`
	TrainGroups       float64 `parquet:"train_groups" json:"train_groups"`
	Seeds             int32   `parquet:"seeds" json:"seeds"`
}

// SamplerSims holds the sampler simulator's series.
var SamplerSims = register(&Table[SamplerSim]{
	Name: "sampler_sim", Version: 1, Key: []string{"sampler", "iteration"},
	Doc:   "one row per sampler and iteration of the sampler simulator: eval reward, zero-variance share, frontier size",
	KeyOf: func(r *SamplerSim) string { return r.Sampler + "/" + pad(int64(r.Iteration)) },
	Less: func(a, b *SamplerSim) bool {
		if a.Sampler != b.Sampler {
			return a.Sampler < b.Sampler
		}
		return a.Iteration < b.Iteration
	},
	Validate: func(r *SamplerSim) error {
		return firstErr(required("sampler", r.Sampler), rate("eval_reward", r.EvalReward), rate("zero_variance_share", r.ZeroVarianceShare),
			finite("frontier_size", r.FrontierSize))
	},
})
