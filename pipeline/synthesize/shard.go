package synthesize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/schemas"
)

// Sharding the synthesis loop.
//
// The loop is sequential where it decides: waves are sized from the
// acceptance rate so far, it stops once Count tasks are accepted, task ids
// are allocated in candidate order, and a candidate is dropped as a
// duplicate of a proposal or of an accepted (possibly fixed) task that came
// before it. What is expensive is not sequential: taking one candidate
// through rule validation, review, dry run and repair depends only on the
// candidate and its id (which seeds it), never on the other candidates.
//
// So a sharded run splits the expensive part and replays the decisions at
// merge. Every shard builds the same candidate stream (the builtin
// proposer's calls are a pure function of seed, document and call index;
// the trajectory candidates a pure function of the input) up to a horizon,
// the candidate budget by default, and takes each candidate it owns (key
// CandidateKey(index)) through the loop as if it were no duplicate. The
// merge (ReplayShards) then runs the unsharded control loop with the same code,
// looking the candidates' outcomes up instead of computing them: the same
// waves, stops, duplicates and ids, hence the same rows. A merge that needs
// a candidate beyond a shard's horizon says so (re-run the shards with a
// larger --horizon).
//
// Shards evaluate candidates an unsharded run may never reach (it stops at
// Count): that is the price of not talking to each other.

func init() {
	// A sharded synthesis merges by replaying the loop over its shards.
	shard.RegisterStageMerge("synthesize", shard.StageMerge{Finish: MergeShards})
}

// CandidateKey is the shard key of the candidate at index idx of a run's
// candidate stream.
func CandidateKey(idx int) string { return "candidate-" + strconv.Itoa(idx) }

// ShardPlan says which candidates a sharded run evaluates.
type ShardPlan struct {
	// Owns reports whether the shard evaluates the candidate with this key.
	Owns func(key string) bool
	// Horizon is how many candidates of the stream the shard considers
	// (whole proposer calls in documents mode); 0 is the candidate budget,
	// which every run stays within.
	Horizon int
}

// ShardState is what a shard records for the merge (in its fragment's
// summary): the run it belongs to and what it proposed.
type ShardState struct {
	RunTag        string `json:"run_tag"`
	Mode          string `json:"mode"`
	Config        string `json:"config"`
	Count         int    `json:"count"`
	MaxCandidates int    `json:"max_candidates"`
	PerCall       int    `json:"per_call"`
	// Horizon: candidates [0, Horizon) of the stream were considered.
	Horizon int `json:"horizon"`
	// CallSizes (documents mode) is the number of candidates of each
	// proposer call within the horizon; Total (trajectories mode) the
	// length of the candidate list.
	CallSizes []int `json:"call_sizes,omitempty"`
	Total     int   `json:"total"`
	// Candidates are the ones this shard owns within the horizon.
	Candidates []ShardCandidate `json:"candidates"`
}

// ShardCandidate is one evaluated candidate as proposed: what the replay
// needs for ids and duplicate checks, and its outcome.
type ShardCandidate struct {
	Index         int    `json:"index"`
	Call          int    `json:"call"`
	ID            string `json:"id"`
	JSON          string `json:"candidate"`
	Instruction   string `json:"instruction"`
	App           string `json:"app"`
	Setup         string `json:"setup"`
	Judge         string `json:"judge"`
	Method        string `json:"method"`
	Origin        string `json:"origin"`
	Raw           bool   `json:"raw,omitempty"`
	Flaw          string `json:"flaw,omitempty"`
	ProposeCalls  int64  `json:"propose_calls"`
	ProposeTokens int64  `json:"propose_tokens"`
	// Accepted, with the accepted version's instruction, setup and judge
	// (the fixer may have changed them).
	Accepted         bool   `json:"accepted"`
	FinalInstruction string `json:"final_instruction,omitempty"`
	FinalSetup       string `json:"final_setup,omitempty"`
	FinalJudge       string `json:"final_judge,omitempty"`
	CaughtBy         string `json:"caught_by,omitempty"`
}

// Evaluation is a shard's output: its state, the synthesis rows of its
// candidates (task ids empty: the merge allocates them) and the tasks they
// would add if accepted (task id = candidate id until the merge).
type Evaluation struct {
	State   ShardState
	Records []schemas.Synthesis
	Tasks   []schemas.Task
	// Summary has the run's pool origin and documents (what the commit
	// records) and the shard's counts.
	Summary Summary
}

// ErrNotShardable marks parameters a sharded run cannot reproduce.
var ErrNotShardable = errors.New("synthesize cannot be sharded")

// CheckShardable says whether a run with these parameters can be sharded.
func CheckShardable(params Params) error {
	p := params.withDefaults()
	if !p.FromTrajectories && p.Proposer == BackendOpenAI {
		return fmt.Errorf("%w with the openai proposer: every shard would have to ask the model for the same proposals, and its replies differ from call to call; shard the rest with --proposer builtin, or run it once", ErrNotShardable)
	}
	return nil
}

// Evaluate is one shard of a run: it builds the run's candidate stream up to
// the horizon and takes the candidates plan owns through the loop.
func Evaluate(ctx context.Context, in Input, params Params, plan ShardPlan) (*Evaluation, error) {
	if err := CheckShardable(params); err != nil {
		return nil, err
	}
	s, sum, pool, err := newStage(in, params, true)
	if err != nil {
		return nil, err
	}
	p := s.p
	h := plan.Horizon
	if h <= 0 {
		h = p.MaxCandidates
	}
	st := ShardState{RunTag: s.runTag, Mode: sum.Mode, Config: s.config, Count: p.Count, MaxCandidates: p.MaxCandidates, PerCall: p.PerCall}
	var stream []*item
	if p.FromTrajectories {
		cands, ts, err := trajectoryCandidates(ctx, pool, in.Trajectories, in.Steps, p)
		if err != nil {
			return nil, err
		}
		sum.Trajectory = ts
		st.Total = len(cands)
		for _, c := range cands[:min(h, len(cands))] {
			stream = append(stream, &item{c: c})
		}
		st.Horizon = len(stream)
	} else {
		if len(s.docs) == 0 {
			return nil, errors.New("synthesize: no knowledge documents")
		}
		calls := (h + p.PerCall - 1) / p.PerCall
		if stream, err = s.proposeLive(ctx, 0, calls); err != nil {
			return nil, err
		}
		st.CallSizes = make([]int, calls)
		for _, it := range stream {
			st.CallSizes[it.call]++
		}
		st.Horizon = len(stream)
	}
	var owned []*item
	var props []ShardCandidate
	for i, it := range stream {
		it.idx = i
		it.candID = fmt.Sprintf("%s-%05d", s.runTag, i)
		c := it.c
		if c.Method == "" {
			c.Method = schemas.SourceSynthesized
		}
		if plan.Owns == nil || plan.Owns(CandidateKey(i)) {
			owned = append(owned, it)
			// The proposal as the merge's duplicate checks see it.
			props = append(props, ShardCandidate{Index: it.idx, Call: it.call, ID: it.candID, JSON: c.JSON(), Instruction: c.Instruction,
				App: c.App, Setup: c.Setup, Judge: c.Judge, Method: c.Method, Origin: c.Origin, Raw: c.Raw != "", Flaw: c.Flaw,
				ProposeCalls: it.proposeCost.Calls, ProposeTokens: it.proposeCost.Tokens})
		}
	}
	if err := s.evaluateLive(ctx, owned); err != nil {
		return nil, err
	}
	ev := &Evaluation{}
	for k, it := range owned {
		sc := props[k]
		sc.CaughtBy = it.caughtBy
		if it.final != nil {
			sc.Accepted = true
			sc.FinalInstruction, sc.FinalSetup, sc.FinalJudge = it.final.Instruction, it.final.Setup, it.final.Judge
			t := it.final.task(it.candID)
			t.Difficulty = int32(it.steps)
			ev.Tasks = append(ev.Tasks, t)
		}
		st.Candidates = append(st.Candidates, sc)
		ev.Records = append(ev.Records, it.rows...)
	}
	sum.Candidates = len(owned)
	sum.Rows = len(ev.Records)
	sum.Accepted = len(ev.Tasks)
	ev.State, ev.Summary = st, *sum
	return ev, nil
}

// ReplayShards is the merge of a sharded run: the unsharded control loop over the
// shards' evaluations. in.Tasks is the input pool (empty: the built-in
// one); records and tasks are every shard's rows.
func ReplayShards(ctx context.Context, in Input, states []ShardState, records []schemas.Synthesis, tasks []schemas.Task) (*Result, error) {
	if len(states) == 0 {
		return nil, errors.New("synthesize: nothing to replay")
	}
	first := states[0]
	byIndex := map[int]*ShardCandidate{}
	var callSizes []int
	horizon := -1
	for i := range states {
		st := &states[i]
		if st.RunTag != first.RunTag || st.Mode != first.Mode || st.Config != first.Config || st.Count != first.Count ||
			st.MaxCandidates != first.MaxCandidates || st.PerCall != first.PerCall || st.Total != first.Total {
			return nil, fmt.Errorf("synthesize: shards %d and 0 ran different synthesis runs (run %s/%s, mode %s/%s): were they given the same documents and flags?",
				i, st.RunTag, first.RunTag, st.Mode, first.Mode)
		}
		for k := range min(len(st.CallSizes), len(callSizes)) {
			if st.CallSizes[k] != callSizes[k] {
				return nil, fmt.Errorf("synthesize: shards disagree on proposer call %d (%d and %d candidates)", k, st.CallSizes[k], callSizes[k])
			}
		}
		if len(st.CallSizes) > len(callSizes) {
			callSizes = append(callSizes, st.CallSizes[len(callSizes):]...)
		}
		if horizon < 0 || st.Horizon < horizon {
			horizon = st.Horizon
		}
		for j := range st.Candidates {
			c := &st.Candidates[j]
			if _, dup := byIndex[c.Index]; dup {
				return nil, fmt.Errorf("synthesize: two shards evaluated candidate %d", c.Index)
			}
			byIndex[c.Index] = c
		}
	}
	recs := map[string][]schemas.Synthesis{}
	for _, r := range records {
		recs[r.CandidateID] = append(recs[r.CandidateID], r)
	}
	accepted := map[string]*schemas.Task{}
	for i := range tasks {
		accepted[tasks[i].TaskID] = &tasks[i]
	}
	p := DefaultParams()
	p.Count, p.MaxCandidates, p.PerCall, p.FromTrajectories = first.Count, first.MaxCandidates, first.PerCall, first.Mode == "trajectories"
	s, sum, pool, err := newStage(in, p, false)
	if err != nil {
		return nil, err
	}
	s.config, s.runTag, sum.Config, sum.Docs = first.Config, first.RunTag, first.Config, nil
	beyond := func(idx int) error {
		return fmt.Errorf("synthesize: the run needs candidate %d, beyond the %d candidates its shards considered; re-run them with --horizon %d or more",
			idx, horizon, 2*horizon)
	}
	lookup := func(idx int) (*item, error) {
		sc := byIndex[idx]
		if sc == nil && idx >= horizon {
			return nil, beyond(idx)
		}
		if sc == nil {
			return nil, fmt.Errorf("synthesize: no shard evaluated candidate %d (key %s): fragments of a bad --shard?", idx, CandidateKey(idx))
		}
		c := &Candidate{Instruction: sc.Instruction, App: sc.App, Setup: sc.Setup, Judge: sc.Judge, Method: sc.Method, Origin: sc.Origin, Flaw: sc.Flaw}
		if sc.Raw {
			c.Raw = "(reply)"
		}
		return &item{c: c, call: sc.Call, stored: sc, proposeCost: Cost{Calls: sc.ProposeCalls, Tokens: sc.ProposeTokens}}, nil
	}
	s.evaluate = func(_ context.Context, wave []*item) error {
		for _, it := range wave {
			sc := it.stored
			if sc.ID != it.candID {
				return fmt.Errorf("synthesize: candidate %d is %s in its shard, %s in the merge", it.idx, sc.ID, it.candID)
			}
			if it.dup != "" {
				it.rows = []schemas.Synthesis{s.duplicateRow(it)}
				continue
			}
			rows := recs[sc.ID]
			if len(rows) == 0 {
				return fmt.Errorf("synthesize: candidate %s has no synthesis rows in its fragment", sc.ID)
			}
			it.rows = make([]schemas.Synthesis, len(rows))
			for k, r := range rows {
				r.TaskID = it.taskID
				it.rows[k] = r
			}
			sort.Slice(it.rows, func(a, b int) bool { return it.rows[a].Round < it.rows[b].Round })
			it.caughtBy = sc.CaughtBy
			if sc.Accepted {
				t := accepted[sc.ID]
				if t == nil {
					return fmt.Errorf("synthesize: accepted candidate %s has no task in its fragment", sc.ID)
				}
				it.final = &Candidate{Instruction: sc.FinalInstruction, Setup: sc.FinalSetup, Judge: sc.FinalJudge}
				it.task = t
			}
		}
		return nil
	}
	var items []*item
	if p.FromTrajectories {
		items, err = s.runList(ctx, first.Total, func(_ context.Context, from, n int) ([]*item, error) {
			var out []*item
			for idx := from; idx < from+n; idx++ {
				it, err := lookup(idx)
				if err != nil {
					return nil, err
				}
				out = append(out, it)
			}
			return out, nil
		})
	} else {
		items, err = s.runDocs(ctx, func(_ context.Context, firstCall, calls int) ([]*item, error) {
			from := 0
			for k := 0; k < firstCall && k < len(callSizes); k++ {
				from += callSizes[k]
			}
			if firstCall+calls > len(callSizes) {
				return nil, beyond(from)
			}
			var out []*item
			for k := firstCall; k < firstCall+calls; k++ {
				for j := 0; j < callSizes[k]; j++ {
					it, err := lookup(from)
					if err != nil {
						return nil, err
					}
					if it.call != k {
						return nil, fmt.Errorf("synthesize: candidate %d comes from proposer call %d, want %d", from, it.call, k)
					}
					out = append(out, it)
					from++
				}
			}
			return out, nil
		})
	}
	if err != nil {
		return nil, err
	}
	return s.result(items, pool, sum), nil
}

// AddTables writes a run's result to out: the pool after the stage replaces
// tasks, the synthesis rows are appended. The unsharded command and the
// merge of a sharded run both write through it.
func AddTables(out *shard.Output, res *Result) error {
	tasks := shard.NewTable(out, schemas.Tasks, shard.TableOptions{Chunk: lake.MaxFileRows, Replace: true})
	recs := shard.NewTable(out, schemas.SynthesisRecords, shard.TableOptions{Chunk: 1 << 16})
	if err := tasks.Add(res.Tasks...); err != nil {
		return err
	}
	return recs.Add(res.Records...)
}

// AddShardTables writes a shard's evaluation to its fragment: the rows and
// provisional tasks (replayed at merge), and the state in its summary.
func AddShardTables(out *shard.Output, ev *Evaluation) error {
	tasks := shard.NewTable(out, schemas.Tasks, shard.TableOptions{Chunk: lake.MaxFileRows})
	recs := shard.NewTable(out, schemas.SynthesisRecords, shard.TableOptions{Chunk: 1 << 16})
	if err := tasks.Add(ev.Tasks...); err != nil {
		return err
	}
	if err := recs.Add(ev.Records...); err != nil {
		return err
	}
	out.Summary = shardSummary{State: ev.State, Evaluated: ev.Summary.Candidates, Accepted: ev.Summary.Accepted}
	return nil
}

type shardSummary struct {
	Evaluated int        `json:"evaluated"`
	Accepted  int        `json:"accepted_if_reached"`
	State     ShardState `json:"state"`
}

// MergeShards is the synthesize stage's shard.StageMerge: it replays the
// run from its fragments and writes what the unsharded run writes.
func MergeShards(ctx context.Context, in *shard.MergeInput) (bool, error) {
	states := make([]ShardState, len(in.Fragments))
	for i, f := range in.Fragments {
		var s shardSummary
		if err := json.Unmarshal(f.Summary, &s); err != nil || s.State.RunTag == "" {
			return false, fmt.Errorf("%s: %w: no synthesis state in its summary (%v)", f.Key(), lake.ErrCorrupt, err)
		}
		states[i] = s.State
	}
	records, err := shard.ReadFragmentRows(ctx, in.Lake, in.Fragments, schemas.SynthesisRecords)
	if err != nil {
		return false, err
	}
	tasks, err := shard.ReadFragmentRows(ctx, in.Lake, in.Fragments, schemas.Tasks)
	if err != nil {
		return false, err
	}
	var input Input
	if in.Base != nil && in.Base.ID != "" {
		input.SnapshotID = in.Base.ID
		if input.Tasks, err = lake.ReadTable(ctx, in.Lake, in.Base, schemas.Tasks); err != nil {
			return false, err
		}
	}
	res, err := ReplayShards(ctx, input, states, records, tasks)
	if err != nil {
		return false, err
	}
	return true, AddTables(in.Out, res)
}
