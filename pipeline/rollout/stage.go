package rollout

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"image/png"
	"runtime"
	"strings"
	"sync"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

// IncompletePenalty is the reward of an episode that hit the turn limit
// (ScaleCUA appendix D).
const IncompletePenalty = -0.2

// Params configure a rollout run.
type Params struct {
	N                 int     `json:"n"`         // rollouts per task (a group)
	MaxTurns          int     `json:"max_turns"` // turn limit per episode
	Workers           int     `json:"workers"`
	Seed              int64   `json:"seed"`
	Iteration         int32   `json:"iteration"`
	IncompletePenalty float64 `json:"incomplete_penalty"`
	TreeOnly          bool    `json:"tree_only"` // skip screenshots (faster; segments then need fixed image tokens)
	// Source labels the episodes: "rollout" (training rollouts, the only ones
	// sample and train read), "eval" (held-out evaluation) or "warmstart"
	// (demonstrations for supervised warm start). Other sources prefix ids.
	Source string `json:"source"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// DefaultParams are the papers' defaults: groups of 8, at most 50 turns.
func DefaultParams() Params {
	return Params{N: 8, MaxTurns: 50, Workers: runtime.NumCPU(), IncompletePenalty: IncompletePenalty, Source: "rollout",
		Width: simdesk.DefaultWidth, Height: simdesk.DefaultHeight}
}

// Episode is one finished rollout: its trajectory row, its steps and the
// blobs (screenshots, trees, final state) it referenced.
type Episode struct {
	Task          schemas.Task
	Trajectory    schemas.Trajectory
	Steps         []schemas.Step
	Blobs         []schemas.Blob
	Verifications []schemas.Verification // filled by a Verifier, if any
	// Redrawn counts the turns on which the policy drew more than one
	// response (not stored: steps holds the executed response only).
	Redrawn int
}

// EnvFactory makes one environment per worker.
type EnvFactory func() (simdesk.Env, error)

// SimEnvs returns a factory of embedded simulators.
func SimEnvs(p Params) EnvFactory {
	return func() (simdesk.Env, error) {
		return simdesk.NewSim(simdesk.Options{Width: p.Width, Height: p.Height, TreeOnly: p.TreeOnly})
	}
}

// EpisodeSeed derives the seed of rollout idx of a task from the run seed,
// so an episode's output does not depend on the number of workers.
func EpisodeSeed(seed int64, taskID string, idx int) int64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	h.Write([]byte(taskID))
	binary.LittleEndian.PutUint64(b[:], uint64(idx))
	h.Write(b[:])
	return int64(h.Sum64() & (1<<62 - 1))
}

func fnvString(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// GroupID names the rollout group of a task in an iteration.
func GroupID(taskID string, iteration int32) string {
	return fmt.Sprintf("%s@it%03d", taskID, iteration)
}

// TrajectoryID names rollout idx of a group.
func TrajectoryID(taskID string, iteration int32, idx int) string {
	return fmt.Sprintf("%s@it%03d#%02d", taskID, iteration, idx)
}

// EpisodeID is the trajectory id of rollout idx of a task in an iteration
// from source: training rollouts ("rollout", or "") are TrajectoryID, other
// sources prefix it ("eval:...") so they never collide with training
// rollouts of the same iteration.
func EpisodeID(source, taskID string, iteration int32, idx int) string {
	id := TrajectoryID(taskID, iteration, idx)
	if source != "" && source != "rollout" {
		id = source + ":" + id
	}
	return id
}

// CheckNew is an error when an episode p would roll out of tasks is
// already in snapshot m's trajectories (the same rollout run twice on one
// lineage, or --iteration naming one already rolled out): the commit would
// hold two rows with one key, and every later stage would refuse them.
// It names the first such trajectory.
func CheckNew(ctx context.Context, l *lake.Lake, m *lake.Manifest, tasks []schemas.Task, p Params) error {
	if m == nil || len(tasks) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, t := range tasks {
		for i := 0; i < p.N; i++ {
			want[EpisodeID(p.Source, t.TaskID, p.Iteration, i)] = true
		}
	}
	var dup string
	err := lake.ScanTable(ctx, l, m, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
		for i := range rows {
			if want[rows[i].TrajectoryID] && (dup == "" || rows[i].TrajectoryID < dup) {
				dup = rows[i].TrajectoryID
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if dup != "" {
		src := p.Source
		if src == "" {
			src = "rollout"
		}
		return fmt.Errorf("rollout: trajectory %s is already in snapshot %.12s (%s episodes of iteration %d were rolled out before): pass another --iteration",
			dup, m.ID, src, p.Iteration)
	}
	return nil
}

// Run rolls out p.N episodes of each task with agents from f, in parallel,
// and calls emit with the episodes in (task order, rollout index) order, so
// output is identical whatever the number of workers. An episode whose
// policy or environment fails is emitted with outcome error and its reason;
// the others go on. emit errors stop the run.
func Run(ctx context.Context, tasks []schemas.Task, f AgentFactory, envs EnvFactory, p Params, emit func(Episode) error) error {
	if p.N < 1 || p.MaxTurns < 1 {
		return fmt.Errorf("rollout: n and max-turns must be >= 1 (have %d, %d)", p.N, p.MaxTurns)
	}
	workers := max(1, p.Workers)
	type job struct {
		i    int // position in output order
		task schemas.Task
		idx  int
	}
	total := len(tasks) * p.N
	jobs := make(chan job)
	// window bounds how far workers run ahead of the in-order emitter, so
	// finished episodes waiting to be emitted cannot pile up in memory.
	window := make(chan struct{}, 4*workers)
	results := make(map[int]Episode)
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var envErr error
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, err := envs()
			if err != nil {
				mu.Lock()
				envErr = fmt.Errorf("rollout: start environment: %w", err)
				mu.Unlock()
				cancel()
				cond.Broadcast()
				return
			}
			defer env.Close()
			for j := range jobs {
				ep := runEpisode(ctx, env, f, j.task, j.idx, p)
				mu.Lock()
				results[j.i] = ep
				cond.Broadcast()
				mu.Unlock()
			}
		}()
	}
	go func() {
		defer close(jobs)
		i := 0
		for _, t := range tasks {
			for idx := 0; idx < p.N; idx++ {
				select {
				case window <- struct{}{}:
				case <-ctx.Done():
					return
				}
				select {
				case jobs <- job{i: i, task: t, idx: idx}:
				case <-ctx.Done():
					return
				}
				i++
			}
		}
	}()
	var emitErr error
	emitted := 0
	for next := 0; next < total && emitErr == nil; next++ {
		mu.Lock()
		for {
			if _, ok := results[next]; ok || ctx.Err() != nil {
				break
			}
			cond.Wait()
		}
		ep, ok := results[next]
		delete(results, next)
		mu.Unlock()
		if !ok {
			break
		}
		emitErr = emit(ep)
		emitted++
		<-window
	}
	cancel()
	cond.Broadcast()
	// Drain so workers blocked on a full channel can finish.
	wg.Wait()
	if envErr != nil {
		return envErr
	}
	if emitErr != nil {
		return emitErr
	}
	if emitted < total {
		return fmt.Errorf("rollout stopped after %d of %d episodes: %w", emitted, total, parent.Err())
	}
	return nil
}

// runEpisode plays one episode; failures become an error outcome.
func runEpisode(ctx context.Context, env simdesk.Env, f AgentFactory, task schemas.Task, idx int, p Params) Episode {
	seed := EpisodeSeed(p.Seed, task.TaskID, idx)
	traj := schemas.Trajectory{TrajectoryID: EpisodeID(p.Source, task.TaskID, p.Iteration, idx), TaskID: task.TaskID, Domain: task.Domain,
		GroupID: GroupID(task.TaskID, p.Iteration), Policy: f.Name(), PolicyVersion: f.Version(), Iteration: p.Iteration,
		Seed: seed, Source: "rollout"}
	if p.Source != "" && p.Source != "rollout" {
		// Other episodes get their own ids and seeds so they never collide
		// with (or are mistaken for) training rollouts of the same iteration.
		traj.GroupID, traj.Source = p.Source+":"+traj.GroupID, p.Source
		seed = EpisodeSeed(p.Seed^int64(fnvString(p.Source)), task.TaskID, idx)
		traj.Seed = seed
	}
	ep := Episode{Task: task}
	blobs := map[string]bool{}
	addBlob := func(b []byte, mime string) string {
		if b == nil {
			return ""
		}
		h := schemas.HashBytes(b)
		if !blobs[h] {
			blobs[h] = true
			bl := schemas.Blob{Hash: h, Mime: mime, Size: int64(len(b)), Bytes: b}
			if mime == "image/png" {
				if cfg, err := png.DecodeConfig(bytes.NewReader(b)); err == nil {
					bl.Width, bl.Height = int32(cfg.Width), int32(cfg.Height)
				}
			}
			ep.Blobs = append(ep.Blobs, bl)
		}
		return h
	}
	fail := func(err error) Episode {
		traj.Outcome, traj.Error, traj.Reward = schemas.OutcomeError, err.Error(), 0
		traj.Steps = int32(len(ep.Steps))
		ep.Trajectory = traj
		return ep
	}
	agent, err := f.New(task, seed)
	if err != nil {
		return fail(fmt.Errorf("policy %s: %w", f.Name(), err))
	}
	if c, ok := agent.(interface{ Close() }); ok {
		defer c.Close() // an agent holding model state (a KV cache) frees it
	}
	obs, err := env.Reset(task, seed)
	if err != nil {
		return fail(fmt.Errorf("environment: %w", err))
	}
	var history []Turn
	for turn := 0; !obs.Done && turn < p.MaxTurns; turn++ {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		d, err := agent.Act(ctx, task, obs, history)
		if err != nil {
			return fail(fmt.Errorf("policy %s at step %d: %w", f.Name(), turn, err))
		}
		st := schemas.Step{TrajectoryID: traj.TrajectoryID, Step: int32(turn), RawAction: d.RawAction, Response: d.Response,
			Observation: addBlob(obs.Screenshot, "image/png"), A11y: addBlob(obs.Tree, treeMime(obs.Tree)),
			PromptTokens: d.PromptTokens, ResponseTokens: int32(len(d.ResponseIDs)), ResponseIDs: d.ResponseIDs, Logprobs: d.Logprobs,
			PromptIDs: d.PromptIDs}
		st.SetAction(d.Action)
		if st.ActionKind == "" {
			st.ActionKind = schemas.ActionUnknown
		}
		if d.Draws > 1 {
			ep.Redrawn++
		}
		history = append(history, Turn{Obs: obs.Kept(), Decision: d})
		obs, err = env.Step(d.Action)
		if err != nil {
			ep.Steps = append(ep.Steps, st)
			return fail(fmt.Errorf("environment at step %d: %w", turn, err))
		}
		st.ActionError = obs.ActionError
		st.Done = obs.Done
		ep.Steps = append(ep.Steps, st)
	}
	score, detail, err := env.Evaluate()
	if err != nil {
		return fail(fmt.Errorf("judge: %w", err))
	}
	traj.Steps = int32(len(ep.Steps))
	traj.JudgeDetail = detail
	switch {
	case !obs.Done:
		traj.Outcome, traj.Reward = schemas.OutcomeIncomplete, p.IncompletePenalty
	case score >= 1:
		traj.Outcome, traj.Reward = schemas.OutcomeSuccess, 1
	default:
		traj.Outcome, traj.Reward = schemas.OutcomeFailure, score
	}
	if len(ep.Steps) > 0 {
		ep.Steps[len(ep.Steps)-1].Reward = traj.Reward
	}
	if sim, ok := env.(interface{ Desktop() *simdesk.Desktop }); ok {
		if state, err := sim.Desktop().MarshalState(); err == nil {
			traj.FinalState = addBlob(state, "application/vnd.cualake.simdesk-state+json")
		}
	}
	ep.Trajectory = traj
	return ep
}

// treeMime is an accessibility tree's type: the simulator's JSON, or the
// XML of an OSWorld VM.
func treeMime(tree []byte) string {
	if t := bytes.TrimSpace(tree); len(t) > 0 && t[0] == '<' {
		return "application/xml"
	}
	return "application/json"
}

// Summary counts outcomes of a run.
type Summary struct {
	Tasks        int            `json:"tasks"`
	Trajectories int            `json:"trajectories"`
	Steps        int            `json:"steps"`
	NewBlobs     int            `json:"new_blobs"`
	Outcomes     map[string]int `json:"outcomes"`
	SuccessRate  float64        `json:"success_rate"`
	MeanReward   float64        `json:"mean_reward"`
	Errors       []string       `json:"errors,omitempty"`
	// Unparsed counts the executed actions that were no action (steps rows
	// with action_kind 'unknown'); Redrawn the turns on which the policy
	// drew again because its response was no action.
	Unparsed int `json:"unparsed_actions"`
	Redrawn  int `json:"redrawn_turns"`
}

// Add counts one episode.
func (s *Summary) Add(ep Episode) {
	if s.Outcomes == nil {
		s.Outcomes = map[string]int{}
	}
	s.Trajectories++
	s.Steps += len(ep.Steps)
	s.Redrawn += ep.Redrawn
	for _, st := range ep.Steps {
		if st.ActionKind == schemas.ActionUnknown {
			s.Unparsed++
		}
	}
	s.Outcomes[ep.Trajectory.Outcome]++
	s.MeanReward += (ep.Trajectory.Reward - s.MeanReward) / float64(s.Trajectories)
	s.SuccessRate = float64(s.Outcomes[schemas.OutcomeSuccess]) / float64(s.Trajectories)
	if ep.Trajectory.Error != "" && len(s.Errors) < 10 {
		s.Errors = append(s.Errors, ep.Trajectory.TrajectoryID+": "+ep.Trajectory.Error)
	}
}

// ErrAllErrored is returned (wrapped) when every episode of a rollout ended
// in error: there is nothing to commit.
var ErrAllErrored = errors.New("every episode ended in error; nothing committed")

// AllErrored returns an error naming the first episode errors when every
// episode of the summary ended in error (the policy endpoint or the
// environment is down), and nil when at least one episode played out.
func (s *Summary) AllErrored() error {
	if s.Trajectories == 0 || s.Outcomes[schemas.OutcomeError] < s.Trajectories {
		return nil
	}
	first := s.Errors
	if len(first) > 3 {
		first = first[:3]
	}
	return fmt.Errorf("rollout: %w (%d of %d episodes); first errors:\n  %s", ErrAllErrored,
		s.Outcomes[schemas.OutcomeError], s.Trajectories, strings.Join(first, "\n  "))
}

var errNoTasks = errors.New("no tasks to roll out")

// SelectTasks picks the tasks of a run: the given ids (each must exist), or
// all tasks, then at most limit of them (0 = no limit).
func SelectTasks(pool []schemas.Task, ids []string, limit int) ([]schemas.Task, error) {
	if limit < 0 {
		// not "no limit": a negative count is a mistake, not a request for all
		return nil, fmt.Errorf("rollout: --limit-tasks is %d, want >= 0 (0: all tasks)", limit)
	}
	var out []schemas.Task
	if len(ids) > 0 {
		byID := map[string]schemas.Task{}
		for _, t := range pool {
			byID[t.TaskID] = t
		}
		for _, id := range ids {
			t, ok := byID[id]
			if !ok {
				return nil, fmt.Errorf("rollout: --tasks names %q, which is not in the pool", id)
			}
			out = append(out, t)
		}
	} else {
		out = append(out, pool...)
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	if len(out) == 0 {
		return nil, errNoTasks
	}
	return out, nil
}

// MarshalParams gives the params recorded in the snapshot.
func (p Params) MarshalParams(policy string, extra map[string]any) map[string]any {
	b, _ := json.Marshal(p)
	m := map[string]any{}
	json.Unmarshal(b, &m)
	delete(m, "workers") // never affects output
	m["policy"] = policy
	for k, v := range extra {
		m[k] = v
	}
	return m
}
