package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/schemas"
)

// ErrNotFound is returned for an id the snapshot does not hold.
var ErrNotFound = errors.New("not in this snapshot")

// Turn is one response of a trajectory: the actions (steps rows, one per
// sub-action) it produced, all taken on the same observation.
type Turn struct {
	Step    int32
	Actions []schemas.Step // in sub order; Actions[0] carries the observation
	// Segment is the item that trains this turn's response and Tokens its
	// part of that item; both nil when no segment of the snapshot does.
	Segment *Segment
	Tokens  *TurnTokens
}

// Segment is the part of a segments row the viewer shows.
type Segment struct {
	ID              string
	Index           int32
	Mode            string
	FirstStep       int32 // first turn (index into the trajectory's turns) trained here
	LastStep        int32
	InputIDs        []int32
	LossMask        []int8
	Tokens          int32
	TrainableTokens int32
	Reward          float64
	Advantage       float64
	Tokenizer       string
}

// Trajectory is everything the trajectory page shows.
type Trajectory struct {
	Row           schemas.Trajectory
	Task          *schemas.Task // nil when the tasks table lacks it
	Turns         []Turn
	Segments      []Segment
	Verifications []schemas.Verification
	// TokenNote says why a turn has no tokens, when that is the same for
	// all of them (no segments, or runs that do not match the turns).
	TokenNote string
}

// Rollout is one trajectory of a group with its actions, for the group
// page.
type Rollout struct {
	Row   schemas.Trajectory
	Turns []Turn
	// Advantages are the distinct advantages of its segments (one value
	// under GRPO; A_i/|T_i| per step item under STEPO); empty when the
	// snapshot holds no segment of it.
	Advantages []float64
}

// Group is a rollout group: the same task, the same iteration.
type Group struct {
	ID       string
	Task     *schemas.Task
	Rollouts []Rollout
}

// Task is everything the task page shows.
type Task struct {
	Row          schemas.Task
	PassRates    []schemas.PassRate
	Trajectories []schemas.Trajectory // newest iteration first, at most MaxTaskTrajectories
	Total        int                  // trajectories of the task in the snapshot
}

// MaxTaskTrajectories bounds the trajectories a task page lists.
const MaxTaskTrajectories = 500

// Blob is a blob's bytes and what they are.
type Blob struct {
	Hash   string
	Mime   string
	Width  int32
	Height int32
	Bytes  []byte
}

const trajectoryCols = `trajectory_id, task_id, domain, group_id, policy, policy_version, iteration, seed, steps, reward,
	outcome, judge_detail, error, source, final_state`

func scanTrajectory(r []any) schemas.Trajectory {
	return schemas.Trajectory{TrajectoryID: str(r[0]), TaskID: str(r[1]), Domain: str(r[2]), GroupID: str(r[3]), Policy: str(r[4]),
		PolicyVersion: int32(num(r[5])), Iteration: int32(num(r[6])), Seed: int64(num(r[7])), Steps: int32(num(r[8])), Reward: num(r[9]),
		Outcome: str(r[10]), JudgeDetail: str(r[11]), Error: str(r[12]), Source: str(r[13]), FinalState: str(r[14])}
}

const stepCols = `trajectory_id, step, sub, action_kind, x, y, x2, y2, text, keys, direction, amount, raw_action, response,
	observation, a11y, prompt_tokens, response_tokens, action_error, reward, done, info`

func scanStep(r []any) schemas.Step {
	return schemas.Step{TrajectoryID: str(r[0]), Step: int32(num(r[1])), Sub: int32(num(r[2])), ActionKind: str(r[3]),
		X: optInt(r[4]), Y: optInt(r[5]), X2: optInt(r[6]), Y2: optInt(r[7]), Text: str(r[8]), Keys: strs(r[9]),
		Direction: str(r[10]), Amount: int32(num(r[11])), RawAction: str(r[12]), Response: str(r[13]), Observation: str(r[14]),
		A11y: str(r[15]), PromptTokens: int32(num(r[16])), ResponseTokens: int32(num(r[17])), ActionError: str(r[18]),
		Reward: num(r[19]), Done: r[20] == true, Info: str(r[21])}
}

const taskCols = `task_id, domain, app, instruction, setup, judge, feasible, abilities, source, parent_task_ids, origin, split, difficulty`

func scanTask(r []any) schemas.Task {
	return schemas.Task{TaskID: str(r[0]), Domain: str(r[1]), App: str(r[2]), Instruction: str(r[3]), Setup: str(r[4]), Judge: str(r[5]),
		Feasible: r[6] == true, Abilities: strs(r[7]), Source: str(r[8]), ParentTaskIDs: strs(r[9]), Origin: str(r[10]), Split: str(r[11]),
		Difficulty: int32(num(r[12]))}
}

// LoadTrajectory reads one trajectory with its task, steps, segments and
// verifications from the engine's snapshot.
func LoadTrajectory(ctx context.Context, e *query.Engine, id string) (*Trajectory, error) {
	res, err := e.Query(ctx, "SELECT "+trajectoryCols+" FROM trajectories WHERE trajectory_id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("trajectory %s: %w", id, err)
	}
	if len(res.Rows) == 0 {
		return nil, fmt.Errorf("trajectory %q: %w", id, ErrNotFound)
	}
	t := &Trajectory{Row: scanTrajectory(res.Rows[0])}
	if t.Task, err = loadTask(ctx, e, t.Row.TaskID); err != nil {
		return nil, err
	}
	steps, err := loadSteps(ctx, e, "trajectory_id = ?", id)
	if err != nil {
		return nil, err
	}
	t.Turns = turnsOf(steps)[id]
	if t.Segments, err = loadSegments(ctx, e, id); err != nil {
		return nil, err
	}
	t.TokenNote = attachTokens(t.Turns, t.Segments)
	res, err = e.Query(ctx, `SELECT trajectory_id, strategy, task_id, domain, rounds, criteria, probe_used, probe_steps, probe_tokens,
		refused_actions, evidence, verdict, executable_outcome, reward FROM verifications WHERE trajectory_id = ? ORDER BY strategy`, id)
	if err != nil {
		return nil, fmt.Errorf("trajectory %s: verifications: %w", id, err)
	}
	for _, r := range res.Rows {
		t.Verifications = append(t.Verifications, schemas.Verification{TrajectoryID: str(r[0]), Strategy: str(r[1]), TaskID: str(r[2]),
			Domain: str(r[3]), Rounds: int32(num(r[4])), Criteria: str(r[5]), ProbeUsed: r[6] == true, ProbeSteps: int32(num(r[7])),
			ProbeTokens: int32(num(r[8])), RefusedActions: int32(num(r[9])), Evidence: strs(r[10]), Verdict: str(r[11]),
			ExecutableOutcome: str(r[12]), Reward: num(r[13])})
	}
	return t, nil
}

// LoadGroup reads a rollout group's trajectories with their actions and
// segment advantages.
func LoadGroup(ctx context.Context, e *query.Engine, id string) (*Group, error) {
	res, err := e.Query(ctx, "SELECT "+trajectoryCols+" FROM trajectories WHERE group_id = ? ORDER BY trajectory_id", id)
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", id, err)
	}
	if len(res.Rows) == 0 {
		return nil, fmt.Errorf("group %q: %w", id, ErrNotFound)
	}
	g := &Group{ID: id}
	for _, r := range res.Rows {
		g.Rollouts = append(g.Rollouts, Rollout{Row: scanTrajectory(r)})
	}
	if g.Task, err = loadTask(ctx, e, g.Rollouts[0].Row.TaskID); err != nil {
		return nil, err
	}
	steps, err := loadSteps(ctx, e, "trajectory_id IN (SELECT trajectory_id FROM trajectories WHERE group_id = ?)", id)
	if err != nil {
		return nil, err
	}
	turns := turnsOf(steps)
	res, err = e.Query(ctx, `SELECT trajectory_id, list(DISTINCT advantage ORDER BY advantage) FROM segments
		WHERE trajectory_id IN (SELECT trajectory_id FROM trajectories WHERE group_id = ?) GROUP BY 1`, id)
	if err != nil {
		return nil, fmt.Errorf("group %s: segments: %w", id, err)
	}
	adv := map[string][]float64{}
	for _, r := range res.Rows {
		xs, _ := r[1].([]any)
		for _, x := range xs {
			adv[str(r[0])] = append(adv[str(r[0])], num(x))
		}
	}
	for i := range g.Rollouts {
		tid := g.Rollouts[i].Row.TrajectoryID
		g.Rollouts[i].Turns, g.Rollouts[i].Advantages = turns[tid], adv[tid]
	}
	return g, nil
}

// LoadTask reads a task with its pass-rate history and its trajectories.
func LoadTask(ctx context.Context, e *query.Engine, id string) (*Task, error) {
	row, err := loadTask(ctx, e, id)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	t := &Task{Row: *row}
	res, err := e.Query(ctx, `SELECT task_id, iteration, rollouts, successes, observed, ema, weight, in_pool, feasible
		FROM pass_rates WHERE task_id = ? ORDER BY iteration`, id)
	if err != nil {
		return nil, fmt.Errorf("task %s: pass rates: %w", id, err)
	}
	for _, r := range res.Rows {
		t.PassRates = append(t.PassRates, schemas.PassRate{TaskID: str(r[0]), Iteration: int32(num(r[1])), Rollouts: int32(num(r[2])),
			Successes: int32(num(r[3])), Observed: optFloat(r[4]), EMA: optFloat(r[5]), Weight: optFloat(r[6]), InPool: r[7] == true, Feasible: r[8] == true})
	}
	res, err = e.Query(ctx, "SELECT count(*) FROM trajectories WHERE task_id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("task %s: trajectories: %w", id, err)
	}
	t.Total = int(num(res.Rows[0][0]))
	res, err = e.Query(ctx, "SELECT "+trajectoryCols+fmt.Sprintf(` FROM trajectories WHERE task_id = ?
		ORDER BY iteration DESC, trajectory_id LIMIT %d`, MaxTaskTrajectories), id)
	if err != nil {
		return nil, fmt.Errorf("task %s: trajectories: %w", id, err)
	}
	for _, r := range res.Rows {
		t.Trajectories = append(t.Trajectories, scanTrajectory(r))
	}
	return t, nil
}

func loadTask(ctx context.Context, e *query.Engine, id string) (*schemas.Task, error) {
	res, err := e.Query(ctx, "SELECT "+taskCols+" FROM tasks WHERE task_id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	if len(res.Rows) == 0 {
		return nil, nil
	}
	t := scanTask(res.Rows[0])
	return &t, nil
}

func loadSteps(ctx context.Context, e *query.Engine, where string, args ...any) ([]schemas.Step, error) {
	res, err := e.Query(ctx, "SELECT "+stepCols+" FROM steps WHERE "+where+" ORDER BY trajectory_id, step, sub", args...)
	if err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	out := make([]schemas.Step, len(res.Rows))
	for i, r := range res.Rows {
		out[i] = scanStep(r)
	}
	return out, nil
}

func loadSegments(ctx context.Context, e *query.Engine, trajectory string) ([]Segment, error) {
	res, err := e.Query(ctx, `SELECT segment_id, index, mode, first_step, last_step, input_ids, loss_mask, tokens, trainable_tokens,
		reward, advantage, tokenizer FROM segments WHERE trajectory_id = ? ORDER BY index`, trajectory)
	if err != nil {
		return nil, fmt.Errorf("trajectory %s: segments: %w", trajectory, err)
	}
	var out []Segment
	for _, r := range res.Rows {
		s := Segment{ID: str(r[0]), Index: int32(num(r[1])), Mode: str(r[2]), FirstStep: int32(num(r[3])), LastStep: int32(num(r[4])),
			Tokens: int32(num(r[7])), TrainableTokens: int32(num(r[8])), Reward: num(r[9]), Advantage: num(r[10]), Tokenizer: str(r[11])}
		ids, _ := r[5].([]any)
		s.InputIDs = make([]int32, len(ids))
		for i, v := range ids {
			s.InputIDs[i] = int32(num(v))
		}
		mask, _ := r[6].([]any)
		s.LossMask = make([]int8, len(mask))
		for i, v := range mask {
			s.LossMask[i] = int8(num(v))
		}
		if len(s.LossMask) != len(s.InputIDs) {
			return nil, fmt.Errorf("segment %s: input_ids has %d values, loss_mask %d", s.ID, len(s.InputIDs), len(s.LossMask))
		}
		out = append(out, s)
	}
	return out, nil
}

// turnsOf groups steps rows (sorted by trajectory, step, sub) into turns
// per trajectory.
func turnsOf(steps []schemas.Step) map[string][]Turn {
	out := map[string][]Turn{}
	for _, s := range steps {
		ts := out[s.TrajectoryID]
		if n := len(ts); n > 0 && ts[n-1].Step == s.Step {
			ts[n-1].Actions = append(ts[n-1].Actions, s)
		} else {
			ts = append(ts, Turn{Step: s.Step, Actions: []schemas.Step{s}})
		}
		out[s.TrajectoryID] = ts
	}
	return out
}

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// LoadBlobs reads the blobs with the given hashes (others, and strings
// that are not sha256 hex, are ignored: the result says which exist).
func LoadBlobs(ctx context.Context, e *query.Engine, hashes []string) (map[string]*Blob, error) {
	out := map[string]*Blob{}
	var quoted []string
	seen := map[string]bool{}
	for _, h := range hashes {
		if hashRE.MatchString(h) && !seen[h] {
			seen[h] = true
			quoted = append(quoted, "'"+h+"'") // hex only: nothing to escape
		}
	}
	sort.Strings(quoted)
	for len(quoted) > 0 {
		n := min(len(quoted), 256)
		res, err := e.Query(ctx, "SELECT hash, mime, width, height, bytes FROM blobs WHERE hash IN ("+strings.Join(quoted[:n], ",")+")")
		if err != nil {
			return nil, fmt.Errorf("blobs: %w", err)
		}
		for _, r := range res.Rows {
			b := &Blob{Hash: str(r[0]), Mime: str(r[1]), Width: int32(num(r[2])), Height: int32(num(r[3]))}
			switch x := r[4].(type) {
			case []byte:
				b.Bytes = x
			case string:
				b.Bytes = []byte(x)
			}
			out[b.Hash] = b
		}
		quoted = quoted[n:]
	}
	return out, nil
}

// BlobHashes lists every blob a trajectory page refers to: screenshots,
// accessibility trees, verification evidence.
func (t *Trajectory) BlobHashes() []string {
	var out []string
	for _, tu := range t.Turns {
		out = append(out, tu.Actions[0].Observation, tu.Actions[0].A11y)
	}
	for _, v := range t.Verifications {
		out = append(out, v.Evidence...)
	}
	return out
}

// BlobHashes lists the screenshots and trees a group page refers to.
func (g *Group) BlobHashes() []string {
	var out []string
	for _, r := range g.Rollouts {
		for _, tu := range r.Turns {
			out = append(out, tu.Actions[0].Observation, tu.Actions[0].A11y)
		}
	}
	return out
}

// value helpers: query.Result rows hold driver values (int32, int64,
// float64, string, bool, []any, nil).

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func num(v any) float64 {
	switch x := v.(type) {
	case nil:
		return 0
	case int8:
		return float64(x)
	case int16:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case uint8:
		return float64(x)
	case uint16:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	case float64:
		return x
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return math.NaN()
}

func optInt(v any) *int32 {
	if v == nil {
		return nil
	}
	n := int32(num(v))
	return &n
}

func optFloat(v any) *float64 {
	if v == nil {
		return nil
	}
	f := num(v)
	return &f
}

func strs(v any) []string {
	xs, _ := v.([]any)
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, str(x))
	}
	return out
}
