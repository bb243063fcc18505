// Package synthesize is the synthesize stage: VeriGen's verifiable task
// synthesis (ScaleCUA section 3.2, appendix B). A proposer writes candidate
// tasks (instruction, setup, declarative judge) from an environment's
// knowledge documents; a rule validator checks each judge statically; a
// judger reviews instruction and judge together; a checker dry-runs the
// task in the simulator (the goal must be reachable, the judge must score
// the reached state 1 and the untouched state 0); a fixer repairs rejected
// candidates for a bounded number of rounds. Trajectory-guided synthesis
// splits failed tasks at the sub-goal where rollouts deviated and composes
// succeeded tasks of one app into harder conjunctive ones.
//
// Roles run on the builtin backend (deterministic, no model: a capability
// grammar that also plants realistic flaws, static rules, a semantic
// review, the simulator's planner, concrete repairs) or on an
// OpenAI-compatible endpoint, mixed freely. Judges stay declarative and are
// interpreted; nothing a model returns is ever run as code.
//
// Run is a pure function of its input and parameters: the same seed gives
// the same rows whatever the number of workers.
package synthesize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

// Params configure a run.
type Params struct {
	// Backend is every role's default backend: builtin or openai.
	Backend string
	// Proposer, Judger, Checker and Fixer override the backend per role.
	Proposer, Judger, Checker, Fixer string
	// Without removes roles from the loop (judger, fixer, rule-validator),
	// for ablations; the configuration is recorded in synthesis.config.
	Without []string
	// Count is the number of accepted tasks to reach: proposals continue,
	// a wave at a time, until at least Count are accepted, the candidate
	// budget is spent, or (from trajectories) the candidates run out. The
	// last wave may add a few more than Count.
	Count int
	// MaxRounds bounds the fixer: a candidate is judged at most
	// 1 + MaxRounds times.
	MaxRounds int
	// PerCall is the number of candidates one proposer call writes.
	PerCall int
	// MaxCandidates is the candidate budget (default 8*Count + 24).
	MaxCandidates int
	// Workers run candidates in parallel; output does not depend on it.
	Workers int
	Seed    int64
	// FromTrajectories synthesizes from the input's trajectories (split
	// failed tasks, compose succeeded ones) instead of from documents.
	FromTrajectories bool
	// FlawRate is the share of builtin proposals with a planted flaw
	// (default 0.35; negative for none).
	FlawRate float64
	// CheckerMaxTurns bounds a policy checker's episode (default 30).
	CheckerMaxTurns int
	// CheckerTreeOnly gives a policy checker accessibility trees instead
	// of screenshots.
	CheckerTreeOnly bool
	// LLM is the endpoint of the openai roles (and the openai checker).
	LLM LLMConfig
	// CheckerPolicy, when set, is the checker's policy (any rollout agent);
	// it overrides the checker backend.
	CheckerPolicy rollout.AgentFactory
}

// DefaultParams are the stage's defaults.
func DefaultParams() Params {
	return Params{Backend: BackendBuiltin, Count: 50, MaxRounds: 3, PerCall: 3, Workers: runtime.NumCPU(), FlawRate: 0.35, CheckerMaxTurns: 30}
}

func (p Params) withDefaults() Params {
	d := DefaultParams()
	if p.Backend == "" {
		p.Backend = d.Backend
	}
	for _, r := range []*string{&p.Proposer, &p.Judger, &p.Checker, &p.Fixer} {
		if *r == "" {
			*r = p.Backend
		}
	}
	if p.Count <= 0 {
		p.Count = d.Count
	}
	if p.MaxRounds < 0 {
		p.MaxRounds = 0
	}
	if p.PerCall <= 0 {
		p.PerCall = d.PerCall
	}
	if p.MaxCandidates <= 0 {
		p.MaxCandidates = 8*p.Count + 24
	}
	if p.Workers <= 0 {
		p.Workers = 1
	}
	if p.FlawRate == 0 {
		p.FlawRate = d.FlawRate
	}
	if p.FlawRate < 0 {
		p.FlawRate = 0
	}
	if p.CheckerMaxTurns <= 0 {
		p.CheckerMaxTurns = d.CheckerMaxTurns
	}
	w := slices.Clone(p.Without)
	sort.Strings(w)
	p.Without = slices.Compact(w)
	return p
}

func (p Params) check() error {
	for _, r := range [][2]string{{RoleProposer, p.Proposer}, {RoleJudger, p.Judger}, {RoleChecker, p.Checker}, {RoleFixer, p.Fixer}} {
		if r[1] != BackendBuiltin && r[1] != BackendOpenAI {
			return fmt.Errorf("synthesize: %s backend %q: want builtin or openai", r[0], r[1])
		}
	}
	for _, w := range p.Without {
		if w != RoleJudger && w != RoleFixer && w != RoleRules {
			return fmt.Errorf("synthesize: --without %q: want judger, fixer or rule-validator", w)
		}
	}
	return nil
}

// Config names the role configuration, as synthesis.config records it:
// "builtin", "openai", or each role's backend when they differ, followed
// by the removed roles ("builtin/without-judger").
func (p Params) Config() string {
	p = p.withDefaults()
	cfg := p.Proposer
	if p.Judger != cfg || p.Checker != cfg || p.Fixer != cfg {
		cfg = fmt.Sprintf("proposer=%s,judger=%s,checker=%s,fixer=%s", p.Proposer, p.Judger, p.Checker, p.Fixer)
	}
	if p.CheckerPolicy != nil {
		cfg += ",checker-policy=" + p.CheckerPolicy.Name()
	}
	for _, w := range p.Without {
		cfg += "/without-" + w
	}
	return cfg
}

// Record is what the snapshot records of the parameters (no workers, no
// secrets).
func (p Params) Record() map[string]any {
	p = p.withDefaults()
	m := map[string]any{"config": p.Config(), "proposer": p.Proposer, "judger": p.Judger, "checker": p.Checker, "fixer": p.Fixer,
		"without": p.Without, "count": p.Count, "max_rounds": p.MaxRounds, "per_call": p.PerCall, "max_candidates": p.MaxCandidates,
		"from_trajectories": p.FromTrajectories, "flaw_rate": p.FlawRate, "seed": p.Seed}
	if m["without"] == nil {
		m["without"] = []string{}
	}
	if p.Proposer == BackendOpenAI || p.Judger == BackendOpenAI || p.Checker == BackendOpenAI || p.Fixer == BackendOpenAI {
		m["endpoint"], m["model"] = p.LLM.BaseURL, p.LLM.Model
	}
	if p.Checker == BackendOpenAI || p.CheckerPolicy != nil {
		m["checker_max_turns"], m["checker_tree_only"] = p.CheckerMaxTurns, p.CheckerTreeOnly
	}
	return m
}

// Input is what the stage reads from its input snapshot.
type Input struct {
	// SnapshotID is the input snapshot ("" for an empty lake); it seeds the
	// candidate ids, so two runs never share one.
	SnapshotID string
	// Tasks is the existing pool; empty means the simulator's built-in
	// pool (what rollout uses on a lake without tasks).
	Tasks []schemas.Task
	// Docs are the knowledge documents; nil means SimdeskDocs.
	Docs []Doc
	// Trajectories and Steps feed trajectory-guided synthesis.
	Trajectories []schemas.Trajectory
	Steps        []schemas.Step
}

// Result is the stage's output.
type Result struct {
	// Tasks is the whole pool after the stage (existing plus accepted),
	// sorted by id: what replaces the tasks table.
	Tasks []schemas.Task
	// Accepted are the new tasks, sorted by id.
	Accepted []schemas.Task
	// Records are the synthesis rows, one per candidate and round, sorted.
	Records []schemas.Synthesis
	Summary Summary
}

// Summary reports a run. Latency is wall-clock time and lives only here,
// never in a table.
type Summary struct {
	Config     string         `json:"config"`
	Mode       string         `json:"mode"` // documents or trajectories
	PoolFrom   string         `json:"pool_from"`
	Docs       []string       `json:"docs,omitempty"`
	Candidates int            `json:"candidates"`
	Rows       int            `json:"rows"`
	Accepted   int            `json:"accepted"`
	ByMethod   map[string]int `json:"accepted_by_method"`
	Dropped    map[string]int `json:"dropped"`
	// ExecutableRate is the share of candidate rounds (duplicates aside)
	// whose judge ran and behaved in the referee's dry run.
	ExecutableRate float64 `json:"executable_rate"`
	// FinalExecutableRate is the share of candidates whose last version is
	// executable: how good the loop's output is, accepted or not.
	FinalExecutableRate float64 `json:"final_executable_rate"`
	// AcceptedExecutableRate is the share of accepted tasks that are
	// executable (what role ablations move).
	AcceptedExecutableRate float64 `json:"accepted_executable_rate"`
	AcceptanceRate         float64 `json:"acceptance_rate"` // accepted / candidates (duplicates aside)
	Calls                  int64   `json:"calls"`
	Tokens                 int64   `json:"tokens"`
	CallsPerAccepted       float64 `json:"calls_per_accepted"`
	TokensPerAccepted      float64 `json:"tokens_per_accepted"`
	// CaughtBy counts, per planted flaw, the role that first rejected it
	// (builtin proposer only).
	CaughtBy map[string]map[string]int `json:"caught_by,omitempty"`
	// Latency.
	Seconds            float64            `json:"seconds"`
	SecondsPerAccepted float64            `json:"seconds_per_accepted"`
	RoleSeconds        map[string]float64 `json:"role_seconds"`
	RoleShare          map[string]float64 `json:"role_share"`
	// Trajectory-guided synthesis.
	Trajectory *TrajectorySummary `json:"trajectory,omitempty"`
	Notes      []string           `json:"notes,omitempty"`
}

// stage holds one run's roles and bookkeeping.
type stage struct {
	p        Params
	in       Input
	docs     []Doc
	docByApp map[string]Doc
	proposer proposerRole
	judger   judgerRole
	checker  checkerRole
	fixer    fixerRole
	without  map[string]bool
	config   string
	runTag   string

	// dedup and ids; touched only by the sequential steps of a wave.
	// instr and specs index the pool and the accepted tasks; seenInstr and
	// seenSpecs every proposal too.
	instr     map[string]string
	specs     map[string]string
	seenInstr map[string]string
	seenSpecs map[string]string
	taskIDs   map[string]bool
	counters  map[string]int
	poolByID  map[string]schemas.Task

	mu    sync.Mutex
	roleT map[string]time.Duration

	// evaluate takes every item of a wave through the loop (or, replaying
	// a sharded run, looks up what its shard found).
	evaluate func(ctx context.Context, wave []*item) error
}

// item is one candidate through the loop.
type item struct {
	idx         int
	c           *Candidate
	candID      string
	taskID      string
	proposeCost Cost
	rows        []schemas.Synthesis
	final       *Candidate
	steps       int
	dup         string // set when dropped as a duplicate before the loop
	caughtBy    string
	err         error

	call   int             // docs mode: the proposer call that wrote the candidate
	task   *schemas.Task   // a replayed accepted task (its id is set on acceptance)
	stored *ShardCandidate // a replayed candidate: what its shard evaluated
}

// Run synthesizes tasks: from the knowledge documents, or from the input's
// trajectories with FromTrajectories.
func Run(ctx context.Context, in Input, params Params) (*Result, error) {
	start := time.Now()
	s, sum, pool, err := newStage(in, params, true)
	if err != nil {
		return nil, err
	}
	s.evaluate = s.evaluateLive
	var items []*item
	if s.p.FromTrajectories {
		var cands []*Candidate
		cands, sum.Trajectory, err = trajectoryCandidates(ctx, pool, in.Trajectories, in.Steps, s.p)
		if err != nil {
			return nil, err
		}
		items, err = s.runList(ctx, len(cands), func(_ context.Context, from, n int) ([]*item, error) {
			var out []*item
			for _, c := range cands[from : from+n] {
				out = append(out, &item{c: c})
			}
			return out, nil
		})
	} else {
		if len(s.docs) == 0 {
			return nil, errors.New("synthesize: no knowledge documents")
		}
		items, err = s.runDocs(ctx, s.proposeLive)
	}
	if err != nil {
		return nil, err
	}
	res := s.result(items, pool, sum)
	sum = &res.Summary
	sum.Seconds = time.Since(start).Seconds()
	if sum.Accepted > 0 {
		sum.SecondsPerAccepted = sum.Seconds / float64(sum.Accepted)
	}
	var total time.Duration
	for _, d := range s.roleT {
		total += d
	}
	for r, d := range s.roleT {
		sum.RoleSeconds[r] = d.Seconds()
		if total > 0 {
			sum.RoleShare[r] = float64(d) / float64(total)
		}
	}
	return res, nil
}

// newStage prepares a run: parameters, pool, documents, dedup indexes, the
// run tag and (with roles) the roles. It returns the summary to fill and the
// pool.
func newStage(in Input, params Params, roles bool) (*stage, *Summary, []schemas.Task, error) {
	p := params.withDefaults()
	if err := p.check(); err != nil {
		return nil, nil, nil, err
	}
	s := &stage{p: p, in: in, without: map[string]bool{}, config: p.Config(), instr: map[string]string{}, specs: map[string]string{},
		seenInstr: map[string]string{}, seenSpecs: map[string]string{},
		taskIDs: map[string]bool{}, counters: map[string]int{}, poolByID: map[string]schemas.Task{}, roleT: map[string]time.Duration{},
		docByApp: map[string]Doc{}}
	for _, w := range p.Without {
		s.without[w] = true
	}
	sum := &Summary{Config: s.config, Mode: "documents", PoolFrom: "snapshot", ByMethod: map[string]int{}, Dropped: map[string]int{},
		RoleSeconds: map[string]float64{}, RoleShare: map[string]float64{}}
	pool := in.Tasks
	if len(pool) == 0 {
		pool, sum.PoolFrom = simdesk.Pool(), "builtin"
	}
	s.docs = in.Docs
	if s.docs == nil {
		docs, err := SimdeskDocs()
		if err != nil {
			return nil, nil, nil, err
		}
		s.docs = docs
	}
	for _, d := range s.docs {
		if _, ok := s.docByApp[d.App]; !ok {
			s.docByApp[d.App] = d
		}
		sum.Docs = append(sum.Docs, d.Name)
	}
	if roles {
		if err := s.buildRoles(); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, t := range pool {
		s.remember(t)
		s.poolByID[t.TaskID] = t
	}
	s.runTag = runTag(in.SnapshotID, p, s.docs)
	if p.FromTrajectories {
		sum.Mode, sum.Docs = "trajectories", nil
	}
	return s, sum, pool, nil
}

// result assembles the rows of a finished run.
func (s *stage) result(items []*item, pool []schemas.Task, sum *Summary) *Result {
	res := &Result{}
	for _, it := range items {
		res.Records = append(res.Records, it.rows...)
		if it.final != nil {
			var t schemas.Task
			if it.task != nil {
				t = *it.task
				t.TaskID = it.taskID
			} else {
				t = it.final.task(it.taskID)
				t.Difficulty = int32(it.steps)
			}
			res.Accepted = append(res.Accepted, t)
		}
	}
	sort.Slice(res.Accepted, func(a, b int) bool { return res.Accepted[a].TaskID < res.Accepted[b].TaskID })
	res.Tasks = append(slices.Clone(pool), res.Accepted...)
	sort.Slice(res.Tasks, func(a, b int) bool { return res.Tasks[a].TaskID < res.Tasks[b].TaskID })
	sort.Slice(res.Records, func(a, b int) bool {
		x, y := res.Records[a], res.Records[b]
		return x.CandidateID < y.CandidateID || (x.CandidateID == y.CandidateID && x.Round < y.Round)
	})
	s.summarize(sum, items, res)
	res.Summary = *sum
	return res
}

func (s *stage) buildRoles() error {
	p := s.p
	var llm *llmClient
	needLLM := p.Proposer == BackendOpenAI || p.Judger == BackendOpenAI || p.Fixer == BackendOpenAI || (p.Checker == BackendOpenAI && p.CheckerPolicy == nil)
	if needLLM {
		var err error
		if llm, err = newLLMClient(p.LLM); err != nil {
			return err
		}
	}
	s.proposer = builtinProposer{flawRate: p.FlawRate}
	if p.Proposer == BackendOpenAI {
		s.proposer = openaiProposer{llm: llm}
	}
	s.judger = builtinJudger{}
	if p.Judger == BackendOpenAI {
		s.judger = openaiJudger{llm: llm, docs: s.docByApp}
	}
	s.fixer = builtinFixer{}
	if p.Fixer == BackendOpenAI {
		s.fixer = openaiFixer{llm: llm, docs: s.docByApp}
	}
	s.checker = builtinChecker{}
	switch {
	case p.CheckerPolicy != nil:
		s.checker = policyChecker{f: p.CheckerPolicy, maxTurns: p.CheckerMaxTurns, treeOnly: p.CheckerTreeOnly}
	case p.Checker == BackendOpenAI:
		f, err := rollout.NewOpenAI(rollout.OpenAIConfig{BaseURL: p.LLM.BaseURL, Model: p.LLM.Model, APIKey: p.LLM.APIKey,
			Timeout: p.LLM.Timeout, Retries: p.LLM.Retries, Backoff: p.LLM.Backoff, Client: p.LLM.Client})
		if err != nil {
			return fmt.Errorf("synthesize: checker: %w", err)
		}
		s.checker = policyChecker{f: f, maxTurns: p.CheckerMaxTurns, treeOnly: p.CheckerTreeOnly}
	}
	return nil
}

// runTag names a run from everything that determines its output, so that
// candidate ids of different runs never collide.
func runTag(snapshot string, p Params, docs []Doc) string {
	h := sha256.New()
	rec, _ := json.Marshal(p.Record())
	h.Write([]byte(snapshot + "\x00"))
	h.Write(rec)
	for _, d := range docs {
		h.Write([]byte("\x00" + d.Name + "\x00" + d.Text))
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

func candSeed(candID string) int64 { return int64(hash64(candID) & (1<<62 - 1)) }

// Dedup keys: the normalised instruction, and judge plus setup.

func specKey(c *Candidate) string { return canonicalJudge(c.Judge) + "\x00" + canonicalSetup(c.Setup) }

func (s *stage) remember(t schemas.Task) {
	c := candidateOf(t)
	s.instr[normInstruction(t.Instruction)] = t.TaskID
	s.specs[specKey(c)] = t.TaskID
	s.taskIDs[t.TaskID] = true
	if m := idRe.FindStringSubmatch(t.TaskID); m != nil {
		n, _ := strconv.Atoi(m[3])
		key := m[1] + "-" + m[2]
		s.counters[key] = max(s.counters[key], n)
	}
}

func (s *stage) duplicateOf(c *Candidate) string {
	k, sk := normInstruction(c.Instruction), specKey(c)
	if id, ok := s.instr[k]; ok {
		return id
	}
	if id, ok := s.specs[sk]; ok {
		return id
	}
	if id, ok := s.seenInstr[k]; ok {
		return id
	}
	if id, ok := s.seenSpecs[sk]; ok {
		return id
	}
	return ""
}

var idRe = regexp.MustCompile(`^(syn|split|comp)-([a-z0-9]+)-(\d+)$`)

// newTaskID allocates the next free id of a method and app.
func (s *stage) newTaskID(method, app string) string {
	prefix := map[string]string{schemas.SourceSynthesized: "syn", schemas.SourceSplit: "split", schemas.SourceComposed: "comp"}[method]
	if prefix == "" {
		prefix = "syn"
	}
	app = strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(app, ""))
	if app == "" {
		app = "task"
	}
	key := prefix + "-" + app
	for {
		s.counters[key]++
		id := fmt.Sprintf("%s-%04d", key, s.counters[key])
		if !s.taskIDs[id] {
			s.taskIDs[id] = true
			return id
		}
	}
}

func (s *stage) time(role string, since time.Time) {
	d := time.Since(since)
	s.mu.Lock()
	s.roleT[role] += d
	s.mu.Unlock()
}

// waveSize is how many more candidates to process: enough for the accepted
// tasks still missing at the acceptance rate so far. It depends on counts
// only, never on timing, so runs are reproducible.
func (s *stage) waveSize(accepted, candidates int) int {
	rate := 0.9
	if candidates >= 6 {
		rate = math.Max(0.15, float64(accepted)/float64(candidates))
	}
	need := int(math.Ceil(float64(s.p.Count-accepted)/rate)) + 1
	return max(1, min(need, s.p.MaxCandidates-candidates))
}

// proposeFunc returns the candidates of proposer calls [first, first+n),
// in order.
type proposeFunc func(ctx context.Context, first, n int) ([]*item, error)

// runDocs proposes from the documents, wave by wave, until Count tasks are
// accepted or the budget is spent.
func (s *stage) runDocs(ctx context.Context, propose proposeFunc) ([]*item, error) {
	var all []*item
	accepted, call := 0, 0
	for accepted < s.p.Count && len(all) < s.p.MaxCandidates {
		calls := (s.waveSize(accepted, len(all)) + s.p.PerCall - 1) / s.p.PerCall
		wave, err := propose(ctx, call, calls)
		if err != nil {
			return nil, err
		}
		call += calls
		for k, it := range wave {
			it.idx = len(all) + k
		}
		if len(wave) == 0 {
			break
		}
		if err := s.process(ctx, wave); err != nil {
			return nil, err
		}
		for _, it := range wave {
			if it.final != nil {
				accepted++
			}
		}
		all = append(all, wave...)
	}
	return all, nil
}

// proposeLive asks the proposer: one request per call, in parallel; the
// seed, document and call index make each call's candidates.
func (s *stage) proposeLive(ctx context.Context, first, calls int) ([]*item, error) {
	avoid := map[string][]string{}
	for _, t := range s.sortedPool() {
		if len(avoid[t.App]) < 20 {
			avoid[t.App] = append(avoid[t.App], t.Instruction)
		}
	}
	reqs := make([]proposeRequest, calls)
	for k := range reqs {
		call := first + k
		// The seed picks the first document, so small counts still vary.
		d := s.docs[(call+int(uint64(s.p.Seed)%uint64(len(s.docs))))%len(s.docs)]
		reqs[k] = proposeRequest{doc: d, call: call, n: s.p.PerCall, seed: hash64(strconv.FormatInt(s.p.Seed, 10), d.Name, strconv.Itoa(call)), avoid: avoid[d.App]}
	}
	type proposal struct {
		cands []*Candidate
		cost  Cost
		err   error
	}
	props := make([]proposal, calls)
	parallel(ctx, s.p.Workers, calls, func(k int) {
		t := time.Now()
		props[k].cands, props[k].cost, props[k].err = s.proposer.propose(ctx, reqs[k])
		s.time(RoleProposer, t)
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*item
	for k, pr := range props {
		if pr.err != nil {
			return nil, pr.err
		}
		for j, c := range pr.cands {
			it := &item{c: c, call: first + k}
			if j == 0 {
				it.proposeCost = pr.cost // one call for the whole batch
			}
			out = append(out, it)
		}
	}
	return out, nil
}

// takeFunc returns the candidates [from, from+n) of a fixed list.
type takeFunc func(ctx context.Context, from, n int) ([]*item, error)

// runList runs a fixed list of total candidates (trajectory-guided
// synthesis) in waves until Count are accepted.
func (s *stage) runList(ctx context.Context, total int, take takeFunc) ([]*item, error) {
	var all []*item
	accepted := 0
	for next := 0; next < total && accepted < s.p.Count && len(all) < s.p.MaxCandidates; {
		n := min(s.waveSize(accepted, len(all)), total-next)
		wave, err := take(ctx, next, n)
		if err != nil {
			return nil, err
		}
		for k, it := range wave {
			it.idx = len(all) + k
		}
		next += n
		if err := s.process(ctx, wave); err != nil {
			return nil, err
		}
		for _, it := range wave {
			if it.final != nil {
				accepted++
			}
		}
		all = append(all, wave...)
	}
	return all, nil
}

func (s *stage) sortedPool() []schemas.Task {
	out := make([]schemas.Task, 0, len(s.poolByID))
	for _, t := range s.poolByID {
		out = append(out, t)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].TaskID < out[b].TaskID })
	return out
}

// process runs one wave: ids and duplicate checks in order, the loop in
// parallel, then acceptance in order.
func (s *stage) process(ctx context.Context, wave []*item) error {
	for _, it := range wave {
		it.candID = fmt.Sprintf("%s-%05d", s.runTag, it.idx)
		if it.c.Method == "" {
			it.c.Method = schemas.SourceSynthesized
		}
		it.taskID = s.newTaskID(it.c.Method, it.c.App)
		if it.c.Raw != "" {
			continue
		}
		if dup := s.duplicateOf(it.c); dup != "" {
			it.dup = dup
			continue
		}
		// Later candidates must not repeat this one either.
		s.seenInstr[normInstruction(it.c.Instruction)] = it.taskID
		s.seenSpecs[specKey(it.c)] = it.taskID
	}
	if err := s.evaluate(ctx, wave); err != nil {
		return err
	}
	for _, it := range wave {
		if it.final == nil {
			continue
		}
		// A fix may have turned the candidate into a copy of a task
		// accepted earlier in this run.
		k := normInstruction(it.final.Instruction)
		sk := specKey(it.final)
		if (s.instr[k] != "" && s.instr[k] != it.taskID) || (s.specs[sk] != "" && s.specs[sk] != it.taskID) {
			last := &it.rows[len(it.rows)-1]
			last.Accepted, last.Dropped = false, "duplicate"
			it.final = nil
			continue
		}
		s.instr[k], s.specs[sk] = it.taskID, it.taskID
	}
	return nil
}

// evaluateLive runs the loop on every item of a wave, in parallel.
func (s *stage) evaluateLive(ctx context.Context, wave []*item) error {
	n := min(s.p.Workers, len(wave))
	workers := make(chan *worker, n)
	for i := 0; i < n; i++ {
		w, err := newWorker()
		if err != nil {
			return err
		}
		workers <- w
	}
	parallel(ctx, n, len(wave), func(i int) {
		w := <-workers
		defer func() { workers <- w }()
		s.runItem(ctx, w, wave[i])
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, it := range wave {
		if it.err != nil {
			return it.err
		}
	}
	return nil
}

// parallel calls fn(0..n-1) on up to workers goroutines.
func parallel(ctx context.Context, workers, n int, fn func(i int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

func jsonList(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(l)
	return string(b)
}

// runItem takes one candidate through rule validation, review, dry run and
// repair, one row per round.
func (s *stage) runItem(ctx context.Context, w *worker, it *item) {
	c := it.c
	seed := candSeed(it.candID)
	base := schemas.Synthesis{CandidateID: it.candID, TaskID: it.taskID, Config: s.config, Origin: c.Origin, Method: c.Method}
	if it.dup != "" {
		it.rows = append(it.rows, s.duplicateRow(it))
		return
	}
	if c.Raw != "" {
		row := base
		row.Candidate, row.Fixes, row.JudgerVerdict = c.JSON(), "[]", "skipped"
		row.Tokens, row.Calls = it.proposeCost.Tokens, int32(it.proposeCost.Calls)
		row.RuleReason = reasons(validateRules(w.sim.Desktop(), c))
		row.CheckerReason = "not run: the reply is not a task"
		row.Dropped = "invalid-reply"
		it.rows = append(it.rows, row)
		return
	}
	var fixes []string
	for round := 0; ; round++ {
		row := base
		row.Round = int32(round)
		row.Candidate, row.Fixes, row.JudgerVerdict = c.JSON(), jsonList(fixes), "skipped"
		var cost Cost
		if round == 0 {
			cost.add(it.proposeCost)
		}
		var issues []Issue
		if s.without[RoleRules] {
			row.RuleValid, row.RuleReason = true, "skipped (without rule-validator)"
		} else {
			t := time.Now()
			ri := validateRules(w.sim.Desktop(), c)
			s.time(RoleRules, t)
			cost.Calls++
			row.RuleValid = len(ri) == 0
			row.RuleReason = "known getters and metrics, well-formed arguments, inputs and cells created by the setup"
			if !row.RuleValid {
				row.RuleReason = reasons(ri)
				if it.caughtBy == "" {
					it.caughtBy = RoleRules
				}
			}
			issues = append(issues, ri...)
		}
		var chk checkResult
		if row.RuleValid {
			if s.without[RoleJudger] {
				row.JudgerReason = "without judger"
			} else {
				t := time.Now()
				ji, reason, jc, err := s.judger.review(ctx, c)
				s.time(RoleJudger, t)
				if err != nil {
					it.err = err
					return
				}
				cost.add(jc)
				row.JudgerVerdict, row.JudgerReason = "accept", reason
				if len(ji) > 0 {
					row.JudgerVerdict = "reject"
					if it.caughtBy == "" {
						it.caughtBy = RoleJudger
					}
				}
				issues = append(issues, ji...)
			}
			t := time.Now()
			chk = s.checker.check(ctx, w, c, seed)
			s.time(RoleChecker, t)
			cost.add(chk.cost)
			row.CheckerReachable, row.CheckerJudgeCorrect, row.CheckerReason = chk.reachable, chk.correct, chk.reason()
			if !(chk.reachable && chk.correct) && it.caughtBy == "" && row.JudgerVerdict != "reject" {
				it.caughtBy = RoleChecker
			}
			issues = append(issues, chk.issues...)
		} else {
			row.JudgerReason = "not reviewed: the rule validator rejected the candidate"
			row.CheckerReason = "not run: the rule validator rejected the candidate"
		}
		t := time.Now()
		row.Executable, _ = referee(w, c, chk, seed)
		s.time("referee", t)
		accepted := row.RuleValid && row.JudgerVerdict != "reject" && chk.reachable && chk.correct
		finish := func(dropped string) {
			row.Dropped = dropped
			row.Tokens, row.Calls = cost.Tokens, int32(cost.Calls)
			it.rows = append(it.rows, row)
		}
		switch {
		case accepted:
			row.Accepted = true
			it.final, it.steps = c, chk.steps
			finish("")
			return
		case round >= s.p.MaxRounds:
			finish("max-rounds")
			return
		case s.without[RoleFixer]:
			finish("rejected")
			return
		}
		t = time.Now()
		n, fx, fc, err := s.fixer.fix(ctx, w, c, issues, seed)
		s.time(RoleFixer, t)
		if err != nil {
			it.err = err
			return
		}
		cost.add(fc) // the repair is spent on this round's rejection
		if n == nil {
			finish("unfixable")
			return
		}
		finish("")
		c, fixes = n, fx
	}
}

// duplicateRow is the one row of a candidate dropped as a duplicate before
// the loop.
func (s *stage) duplicateRow(it *item) schemas.Synthesis {
	c := it.c
	row := schemas.Synthesis{CandidateID: it.candID, TaskID: it.taskID, Config: s.config, Origin: c.Origin, Method: c.Method}
	row.Candidate, row.Fixes, row.JudgerVerdict = c.JSON(), "[]", "skipped"
	if it.stored != nil {
		row.Candidate = it.stored.JSON
	}
	row.Tokens, row.Calls = it.proposeCost.Tokens, int32(it.proposeCost.Calls)
	row.RuleReason = schemas.SynthesisNotValidated + "duplicate of " + it.dup
	row.CheckerReason = "not run: duplicate of " + it.dup
	row.Dropped = "duplicate"
	return row
}

// summarize computes the reported rates.
func (s *stage) summarize(sum *Summary, items []*item, res *Result) {
	var rows, execRows, cands, finalExec, accExec int
	for _, it := range items {
		sum.Candidates++
		for _, r := range it.rows {
			sum.Rows++
			sum.Calls += int64(r.Calls)
			sum.Tokens += r.Tokens
			if r.Dropped != "" {
				sum.Dropped[r.Dropped]++
			}
		}
		if it.dup != "" {
			continue
		}
		cands++
		for _, r := range it.rows {
			rows++
			if r.Executable {
				execRows++
			}
		}
		last := it.rows[len(it.rows)-1]
		if last.Executable {
			finalExec++
		}
		if last.Accepted {
			sum.Accepted++
			sum.ByMethod[it.c.Method]++
			if last.Executable {
				accExec++
			}
		}
		if it.c.Flaw != "" {
			if sum.CaughtBy == nil {
				sum.CaughtBy = map[string]map[string]int{}
			}
			if sum.CaughtBy[it.c.Flaw] == nil {
				sum.CaughtBy[it.c.Flaw] = map[string]int{}
			}
			by := it.caughtBy
			if by == "" {
				by = "nobody"
			}
			sum.CaughtBy[it.c.Flaw][by]++
		}
	}
	rate := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	sum.ExecutableRate = rate(execRows, rows)
	sum.FinalExecutableRate = rate(finalExec, cands)
	sum.AcceptedExecutableRate = rate(accExec, sum.Accepted)
	sum.AcceptanceRate = rate(sum.Accepted, cands)
	if sum.Accepted > 0 {
		sum.CallsPerAccepted = float64(sum.Calls) / float64(sum.Accepted)
		sum.TokensPerAccepted = float64(sum.Tokens) / float64(sum.Accepted)
	}
	if sum.Accepted < s.p.Count {
		sum.Notes = append(sum.Notes, fmt.Sprintf("accepted %d of the %d tasks asked for (candidate budget %d or candidates exhausted)", sum.Accepted, s.p.Count, s.p.MaxCandidates))
	}
}
