package experiment

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/schemas"
)

// PrefixEnd is the key of the last step of the shared prefix: the initial
// pass over the pool, after which the RL iterations begin.
const PrefixEnd = "initial-pass"

func prefixSteps(c loop.Config) ([]loop.Step, error) {
	steps := loop.Plan(c)
	for i, s := range steps {
		if s.Key == PrefixEnd {
			return steps[:i+1], nil
		}
	}
	return nil, fmt.Errorf("the plan has no %s step", PrefixEnd)
}

// suffixSteps are the plan's steps after the prefix.
func suffixSteps(c loop.Config) []loop.Step {
	steps := loop.Plan(c)
	for i, s := range steps {
		if s.Key == PrefixEnd {
			return steps[i+1:]
		}
	}
	return nil
}

func stepsID(steps []loop.Step) string {
	type key struct {
		Key     string
		Command []string
		Flags   []string
	}
	ks := make([]key, len(steps))
	for i, s := range steps {
		ks[i] = key{s.Key, s.Command, s.Flags}
	}
	b, _ := json.Marshal(ks)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:12]
}

// errStemFailed stops the prefixes of a stem that failed or was cancelled;
// the stem's own error is the one reported.
var errStemFailed = errors.New("its stem did not complete")

// errStemOtherCode is a stem whose branch another code version committed:
// its prefixes do not share it.
var errStemOtherCode = errors.New("its stem was committed by another code version")

// Options configure Run.
type Options struct {
	// Workers is how many branches run at once (prefixes first, then the
	// variants forked from them); 0 is 1.
	Workers int
	// Executor returns the executor of the stage commands of one branch
	// (in-process with --branch, or Slurm jobs that commit to it); log is
	// where that branch's stage output goes.
	Executor func(branch string, log io.Writer) loop.Executor
	// Log receives progress lines, each prefixed with its branch.
	Log io.Writer
}

// BranchResult is what Run did on one branch.
type BranchResult struct {
	Branch  string  `json:"branch"`
	Variant string  `json:"variant,omitempty"` // "" for a prefix
	Stem    bool    `json:"stem,omitempty"`    // a stem: steps prefixes share
	Seed    int64   `json:"seed"`
	Head    string  `json:"head"`
	Ran     int     `json:"steps_run"`
	Resumed int     `json:"steps_resumed"`
	Seconds float64 `json:"seconds"`
}

// Result is what Run did.
type Result struct {
	Experiment string         `json:"experiment"`
	Prefixes   []BranchResult `json:"prefixes"` // stems included (Stem)
	Arms       []BranchResult `json:"variants"`
	// Snapshot is the commit of the experiments table on the results
	// branch (the handle's).
	Snapshot string  `json:"snapshot"`
	Rows     int     `json:"rows"`
	Seconds  float64 `json:"seconds"`
}

// Run runs every prefix and arm of p, forking from l's branch (main unless
// OnBranch): each prefix on its own branch, then each arm on its branch
// from the prefix's last snapshot, up to opt.Workers at once; and then
// replaces the experiment's rows of the experiments table on l's branch.
// What is committed is never redone, so a rerun after a kill continues.
func Run(ctx context.Context, l *lake.Lake, p *Plan, opt Options) (*Result, error) {
	t0 := time.Now()
	if opt.Workers < 1 {
		opt.Workers = 1
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	from, err := forkPoint(ctx, l)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, opt.Workers)
	var mu sync.Mutex
	res := &Result{Experiment: p.Spec.Name}
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		cancel()
	}
	log := &lineLog{w: opt.Log}
	// A prefix's head is set before its channel closes ("" on failure).
	type prefixDone struct {
		ch   chan struct{}
		head string
	}
	done := map[*Prefix]*prefixDone{}
	for _, pre := range p.Prefixes {
		done[pre] = &prefixDone{ch: make(chan struct{})}
	}
	// acquire takes a worker slot, or fails when the run is cancelled.
	acquire := func() bool {
		select {
		case sem <- struct{}{}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// A stem runs once, on the first demand of a prefix (or deeper stem)
	// that forks from it and is not already on its branch; nothing waits
	// for one while holding a slot, so one worker cannot deadlock.
	type stemDone struct {
		once sync.Once
		head string
		err  error
	}
	stems := map[*Prefix]*stemDone{}
	for _, st := range p.Stems {
		stems[st] = &stemDone{}
	}
	var ensure func(st *Prefix) (string, error)
	// prepare shares what pre can take without running: another
	// experiment's equal prefix (adoptPrefix), a sibling prefix's steps
	// (for a stem), another experiment's leading steps (adoptRecorded), or
	// its stem's, computed first if need be.
	prepare := func(pre *Prefix) error {
		if err := adoptPrefix(ctx, l, pre, log.with(pre.Branch)); err != nil {
			return err
		}
		if done, err := hasBranch(ctx, l, pre.Branch); err != nil || done {
			return err
		}
		if resumed, err := resumeAdoption(ctx, l, pre); err != nil || resumed {
			return err
		}
		if stems[pre] != nil {
			if err := adoptFromSibling(ctx, l, p, pre, log.with(pre.Branch)); err != nil {
				return err
			}
			if done, err := hasBranch(ctx, l, pre.Branch); err != nil || done {
				return err
			}
		}
		// Another experiment's recorded steps, where they reach beyond
		// what pre's own stem would give it.
		fromStem := 0
		if pre.Parent != nil {
			fromStem = len(pre.Parent.Steps)
		}
		if err := adoptRecorded(ctx, l, pre, fromStem, log.with(pre.Branch)); err != nil {
			return err
		}
		if pre.Parent == nil {
			return nil
		}
		if done, err := hasBranch(ctx, l, pre.Branch); err != nil || done {
			return err
		}
		if _, err := ensure(pre.Parent); errors.Is(err, errStemOtherCode) {
			return nil // runs alone, from the fork point
		} else if err != nil {
			return errStemFailed // the stem said why
		}
		return adoptSteps(ctx, l, pre, pre.Parent.Branch, pre.Parent.RunID, pre.Parent.Steps, "stem", log.with(pre.Branch))
	}
	ensure = func(st *Prefix) (string, error) {
		sd := stems[st]
		sd.once.Do(func() {
			defer func() {
				if sd.err != nil && !errors.Is(sd.err, errStemFailed) && !errors.Is(sd.err, errStemOtherCode) {
					fail(fmt.Errorf("stem %s: %w", st.Branch, sd.err))
				}
			}()
			if sd.err = prepare(st); sd.err != nil {
				return
			}
			if !acquire() {
				sd.err = errStemFailed // cancelled: whoever cancelled said why
				return
			}
			defer func() { <-sem }()
			br, err := runPrefix(ctx, l, p, st, from, opt, log.with(st.Branch))
			if errors.Is(err, loop.ErrOtherCodeVersion) {
				// A stem branch of an older version: its prefixes run
				// alone, as before stems, rather than fail.
				fmt.Fprintf(log.with(st.Branch), "stem: %v; the prefixes that fork from it run their own steps\n", err)
				sd.err = errStemOtherCode
				return
			}
			if err != nil {
				sd.err = err
				return
			}
			br.Stem = true
			mu.Lock()
			res.Prefixes = append(res.Prefixes, br)
			mu.Unlock()
			sd.head = br.Head
		})
		return sd.head, sd.err
	}
	// The prefixes take their slots in the plan's order (turn i opens when
	// prefix i-1 has its slot or has given up), all before the arms, which
	// go seed by seed (DispatchOrder), so that a run stopped half-way has
	// every variant at its first seeds. A prefix prepares (and waits for
	// its stem) before its turn, holding no slot.
	turns := make([]chan struct{}, len(p.Prefixes)+1)
	for i := range turns {
		turns[i] = make(chan struct{})
	}
	close(turns[0])
	var wg sync.WaitGroup
	for i, pre := range p.Prefixes {
		d := done[pre]
		wg.Add(1)
		go func(i int, pre *Prefix) {
			defer wg.Done()
			defer close(d.ch)
			var once sync.Once
			next := func() { once.Do(func() { close(turns[i+1]) }) }
			defer next()
			if err := prepare(pre); err != nil {
				if !errors.Is(err, errStemFailed) {
					fail(fmt.Errorf("prefix %s: %w", pre.Branch, err))
				}
				return
			}
			select {
			case <-turns[i]:
			case <-ctx.Done():
				return
			}
			if !acquire() {
				return
			}
			next()
			defer func() { <-sem }()
			br, err := runPrefix(ctx, l, p, pre, from, opt, log.with(pre.Branch))
			if err != nil {
				fail(fmt.Errorf("prefix %s: %w", pre.Branch, err))
				return
			}
			mu.Lock()
			res.Prefixes = append(res.Prefixes, br)
			mu.Unlock()
			d.head = br.Head
		}(i, pre)
	}
	select {
	case <-turns[len(p.Prefixes)]:
	case <-ctx.Done():
	}
	// The arms start in DispatchOrder, each when its prefix is done and its
	// Leader (if any) has finished, so that it takes the leader's steps
	// instead of computing them beside it; an arm that must wait lets the
	// next ready one take the slot.
	finished := map[*Arm]chan struct{}{}
	for _, a := range p.Arms {
		finished[a] = make(chan struct{})
	}
	wake := make(chan struct{}, 1)
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	for _, pre := range p.Prefixes {
		go func(ch chan struct{}) {
			select {
			case <-ch:
				signal()
			case <-ctx.Done():
			}
		}(done[pre].ch)
	}
	ready := func(a *Arm) bool {
		if !isClosed(done[a.Prefix].ch) {
			return false
		}
		lead := finished[a.Leader] // nil: no leader, or one outside this plan
		return lead == nil || isClosed(lead)
	}
	for _, a := range p.Arms {
		if finished[a.Leader] != nil {
			fmt.Fprintf(log.with(a.Branch), "waits for %s: its first %d steps are this arm's (they run once)\n",
				a.Leader.Branch, sharedSteps(suffixSteps(a.Config), suffixSteps(a.Leader.Config)))
		}
	}
	pending := DispatchOrder(p)
	for len(pending) > 0 && ctx.Err() == nil {
		i := slices.IndexFunc(pending, ready)
		if i < 0 {
			select {
			case <-wake:
			case <-ctx.Done():
			}
			continue
		}
		a := pending[i]
		pending = slices.Delete(pending, i, i+1)
		d := done[a.Prefix]
		if d.head == "" || !acquire() {
			close(finished[a]) // the prefix failed (and said so), or the run is cancelled
			signal()
			continue
		}
		wg.Add(1)
		go func(a *Arm) {
			defer wg.Done()
			defer signal()
			defer close(finished[a])
			br, err := runArm(ctx, l, p, a, d.head, opt, log.with(a.Branch))
			<-sem
			if err == nil {
				err = recordAfter(ctx, l, a, d.head, finished)
			}
			if err != nil {
				fail(fmt.Errorf("variant %s seed %d (branch %s): %w", a.Variant, a.Seed, a.Branch, err))
				return
			}
			mu.Lock()
			res.Arms = append(res.Arms, br)
			mu.Unlock()
		}(a)
	}
	wg.Wait()
	if len(errs) > 0 {
		return res, errors.Join(errs...)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("experiment %s: %w", p.Spec.Name, err) // interrupted: the rerun continues
	}
	sort.Slice(res.Prefixes, func(i, j int) bool { return res.Prefixes[i].Branch < res.Prefixes[j].Branch })
	sort.Slice(res.Arms, func(i, j int) bool { return res.Arms[i].Branch < res.Arms[j].Branch })
	rows, err := Collect(ctx, l, p)
	if err != nil {
		return res, err
	}
	m, err := commitResults(ctx, l, p, rows)
	if err != nil {
		return res, err
	}
	res.Snapshot, res.Rows, res.Seconds = m.ID, len(rows), time.Since(t0).Seconds()
	return res, nil
}

// isClosed reports whether ch is closed (it never carries values).
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// DispatchOrder is the order in which Run starts the arms: seed by seed,
// the variants in the file's order within a seed.
func DispatchOrder(p *Plan) []*Arm {
	out := append([]*Arm{}, p.Arms...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seed < out[j].Seed })
	return out
}

// forkPoint is the snapshot prefixes fork from: the head of l's branch.
// An empty lake first gets an empty root on main, since a branch must
// point somewhere.
func forkPoint(ctx context.Context, l *lake.Lake) (string, error) {
	head, err := l.Head(ctx)
	if err != nil {
		return "", fmt.Errorf("experiment: the branch to fork from: %w", err)
	}
	if head != "" {
		return head, nil
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		return "", err
	}
	// A zero-row experiments table is the root's one change (a commit
	// that changes nothing adds no snapshot).
	if err := tx.Replace(schemas.ExperimentResults.Name, nil); err != nil {
		return "", err
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "experiment", Message: "empty root that experiment branches fork from"})
	if err != nil {
		return "", fmt.Errorf("experiment: root snapshot: %w", err)
	}
	return m.ID, nil
}

func ensureBranch(ctx context.Context, l *lake.Lake, name, from string) (bool, error) {
	branches, err := l.Branches(ctx)
	if err != nil {
		return false, err
	}
	if _, ok := branches[name]; ok {
		return false, nil
	}
	if _, err := l.CreateBranch(ctx, name, from); err != nil {
		return false, err
	}
	return true, nil
}

// runPrefix runs pre's steps on its branch (created at from unless
// prepare shared it), resuming what is done.
func runPrefix(ctx context.Context, l *lake.Lake, p *Plan, pre *Prefix, from string, opt Options, log io.Writer) (BranchResult, error) {
	t0 := time.Now()
	br := BranchResult{Branch: pre.Branch, Seed: pre.Seed}
	if _, err := ensureBranch(ctx, l, pre.Branch, from); err != nil {
		return br, err
	}
	b, err := l.OnBranch(pre.Branch)
	if err != nil {
		return br, err
	}
	steps, err := loop.RunSteps(ctx, b, pre.RunID, pre.Steps, opt.Executor(pre.Branch, log), log)
	if err != nil {
		return br, err
	}
	if err := recordSteps(ctx, l, pre); err != nil {
		return br, err
	}
	count(&br, steps)
	br.Head, br.Seconds = steps[len(steps)-1].Snapshot, time.Since(t0).Seconds()
	return br, nil
}

// adoptPrefix lets one lake compute a prefix once for every experiment:
// when pre's steps are not committed on its branch and another
// experiment's prefix branch with the same steps and seed (the same
// p<hash>/s<seed>) has committed all of them, pre's branch gets the same
// done and start tags and then is created at that snapshot, so every step
// resumes and iteration 0's seconds are the ones measured when it ran. A
// partly committed one is not adopted (pre runs from the fork point).
func adoptPrefix(ctx context.Context, l *lake.Lake, pre *Prefix, log io.Writer) error {
	i := strings.Index(pre.Branch, prefixDir)
	if i < 0 {
		return nil
	}
	tail := pre.Branch[i:]
	return adopt(ctx, l, pre.Branch, pre.RunID, pre.Steps, log, "prefix", func(name string) bool {
		return strings.HasSuffix(name, tail)
	}, nil)
}

// adopt gives branch the run tags of the first donor (a branch named by
// want, sorted) on which every step of run is done, with nothing
// committed after the last (and accepted by check, when set), and then
// creates branch at that snapshot. Tags first: a kill before the branch
// exists leaves complete tags, from which the rerun creates it. A branch
// that exists already is left alone.
func adopt(ctx context.Context, l *lake.Lake, branch, run string, steps []loop.Step, log io.Writer, what string,
	want func(string) bool, check func(donor, head string) (bool, error)) error {
	branches, err := l.Branches(ctx)
	if err != nil {
		return err
	}
	if _, ok := branches[branch]; ok {
		return nil
	}
	tags, err := l.Tags(ctx)
	if err != nil {
		return err
	}
	last := steps[len(steps)-1].Key
	if own, ok := runTags(tags, branch, run, steps); ok {
		_, err := l.CreateBranch(ctx, branch, own[last]) // tagged, then killed
		return err
	}
	var donors []string
	for name := range branches {
		if name != branch && strings.HasPrefix(name, "exp/") && want(name) {
			donors = append(donors, name)
		}
	}
	sort.Strings(donors)
	for _, donor := range donors {
		got, ok := runTags(tags, donor, run, steps)
		if !ok || branches[donor] != got[last] {
			continue
		}
		// Another code version's run is not this run (loop.ErrOtherCodeVersion).
		if m, err := l.Snapshot(ctx, got[last]); err != nil {
			return fmt.Errorf("the %s of %s: %w", what, donor, err)
		} else if !loop.SameCode(m) {
			fmt.Fprintf(log, "%s: %s ran the same steps under %s (this is %s); not shared\n", what, donor, m.CodeVersion, lake.CodeVersion)
			continue
		}
		if check != nil {
			same, err := check(donor, got[last])
			if err != nil {
				return err
			}
			if !same {
				continue
			}
		}
		if err := shareRun(ctx, l, branch, run, got, got[last]); err != nil {
			return fmt.Errorf("sharing the %s of %s: %w", what, donor, err)
		}
		fmt.Fprintf(log, "%s: the same steps of run %s are committed on %s; shared (snapshot %s), not recomputed\n", what, run, donor, lake.ShortID(got[last]))
		return nil
	}
	return nil
}

func hasBranch(ctx context.Context, l *lake.Lake, name string) (bool, error) {
	_, err := l.BranchHead(ctx, name)
	if errors.Is(err, lake.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// resumeAdoption finishes an adoption that a kill cut short after the
// tags: pre has no branch but done tags for its first steps (adoptSteps
// writes tags first), so its branch is created at the last of them, as
// adopt does for a complete set, whatever the plan's stems are now. It
// reports whether it created the branch.
func resumeAdoption(ctx context.Context, l *lake.Lake, pre *Prefix) (bool, error) {
	tags, err := l.Tags(ctx)
	if err != nil {
		return false, err
	}
	last := ""
	for _, s := range pre.Steps {
		id, ok := tags[loop.DoneTag(pre.Branch, pre.RunID, s.Key)]
		if !ok {
			break
		}
		last = id
	}
	if last == "" {
		return false, nil
	}
	if _, err := l.CreateBranch(ctx, pre.Branch, last); err != nil {
		return false, err
	}
	return true, nil
}

// adoptSteps gives pre the first len(shared) steps that donor's run has
// done: their done and start tags under pre's run, then pre's branch at
// the last one's snapshot, from which RunSteps resumes them and runs the
// rest. Nothing when pre's branch exists, when the donor has not done
// them all, or when another code version did.
func adoptSteps(ctx context.Context, l *lake.Lake, pre *Prefix, donor, donorRun string, shared []loop.Step, what string, log io.Writer) error {
	if done, err := hasBranch(ctx, l, pre.Branch); err != nil || done {
		return err
	}
	tags, err := l.Tags(ctx)
	if err != nil {
		return err
	}
	got, ok := runTags(tags, donor, donorRun, shared)
	if !ok {
		return nil
	}
	last := got[shared[len(shared)-1].Key]
	if m, err := l.Snapshot(ctx, last); err != nil {
		return fmt.Errorf("the %s %s: %w", what, donor, err)
	} else if !loop.SameCode(m) {
		fmt.Fprintf(log, "%s: %s ran these steps under %s (this is %s); not shared\n", what, donor, m.CodeVersion, lake.CodeVersion)
		return nil
	}
	if err := shareRun(ctx, l, pre.Branch, pre.RunID, got, last); err != nil {
		return fmt.Errorf("sharing the %s %s: %w", what, donor, err)
	}
	fmt.Fprintf(log, "%s: the first %d steps are committed on %s; shared (snapshot %s), not recomputed\n", what, len(shared), donor, lake.ShortID(last))
	return nil
}

// adoptFromSibling lets stem st take its steps from a prefix of the plan
// that forks from it (directly or not) and has done them on its own
// branch: a lake where the prefixes ran before stems existed, or one
// group of variants ran before the others were added to the file.
func adoptFromSibling(ctx context.Context, l *lake.Lake, p *Plan, st *Prefix, log io.Writer) error {
	for _, pre := range p.Prefixes {
		if pre.Seed != st.Seed || sharedSteps(pre.Steps, st.Steps) != len(st.Steps) {
			continue
		}
		if ok, err := hasBranch(ctx, l, pre.Branch); err != nil {
			return err
		} else if !ok {
			continue
		}
		if err := adoptSteps(ctx, l, st, pre.Branch, pre.RunID, st.Steps, "prefix", log); err != nil {
			return err
		}
		if done, err := hasBranch(ctx, l, st.Branch); err != nil || done {
			return err
		}
	}
	return nil
}

// shareRun gives branch's run the tags got (step keys, and keys with
// loop.StartedSuffix, as runTags returns them), in key order, and then
// creates branch at head: tags first, so a kill in between leaves tags a
// rerun completes (adopt, resumeAdoption).
func shareRun(ctx context.Context, l *lake.Lake, branch, run string, got map[string]string, head string) error {
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := l.Tag(ctx, loop.DoneTag(branch, run, k), got[k]); err != nil {
			return err
		}
	}
	_, err := l.CreateBranch(ctx, branch, head)
	return err
}

// runTags are branch's done and start tags of run's steps, by the part
// after <branch>/run/<run>/ (the step key, or it and loop.StartedSuffix);
// ok only if every step is done.
func runTags(tags map[string]string, branch, run string, steps []loop.Step) (map[string]string, bool) {
	out := map[string]string{}
	for _, s := range steps {
		t := loop.DoneTag(branch, run, s.Key)
		id, ok := tags[t]
		if !ok {
			return nil, false
		}
		out[s.Key] = id
		if st, ok := tags[t+loop.StartedSuffix]; ok {
			out[s.Key+loop.StartedSuffix] = st
		}
	}
	return out, true
}

func count(br *BranchResult, steps []loop.StepResult) {
	for _, s := range steps {
		if s.Resumed {
			br.Resumed++
		} else {
			br.Ran++
		}
	}
}

func runArm(ctx context.Context, l *lake.Lake, p *Plan, a *Arm, prefixHead string, opt Options, log io.Writer) (BranchResult, error) {
	t0 := time.Now()
	br := BranchResult{Branch: a.Branch, Variant: a.Variant, Seed: a.Seed}
	if err := adoptArm(ctx, l, a, prefixHead, log); err != nil {
		return br, err
	}
	if err := adoptArmSteps(ctx, l, a, prefixHead, log); err != nil {
		return br, err
	}
	if _, err := ensureBranch(ctx, l, a.Branch, prefixHead); err != nil {
		return br, err
	}
	b, err := l.OnBranch(a.Branch)
	if err != nil {
		return br, err
	}
	if err := markBranch(ctx, b, p, a, prefixHead); err != nil {
		return br, err
	}
	steps := suffixSteps(a.Config)
	var res []loop.StepResult
	if len(steps) > 0 {
		if res, err = loop.RunSteps(ctx, b, loop.RunID(a.Config), steps, opt.Executor(a.Branch, log), log); err != nil {
			return br, err
		}
	}
	count(&br, res)
	if br.Head, err = b.Head(ctx); err != nil {
		return br, err
	}
	br.Seconds = time.Since(t0).Seconds()
	return br, nil
}

// recordAfter records a's leading steps (recordArm) once its sharers in
// this run have finished (finished closes after an arm has recorded). The
// first record of a sequence wins, so an arm that ran its few shared
// steps beside a longer arm would otherwise, by finishing first, keep the
// longer arm's deeper sequences (the ones a waiting follower takes) from
// being recorded. Cancelled, it records nothing: the rerun does.
func recordAfter(ctx context.Context, l *lake.Lake, a *Arm, fork string, finished map[*Arm]chan struct{}) error {
	for _, b := range a.sharers {
		if finished[b] == nil {
			continue // not in this run (--seeds)
		}
		select {
		case <-finished[b]:
		case <-ctx.Done():
			return nil
		}
	}
	return recordArm(ctx, l, a, fork)
}

// adoptArm shares a finished run between experiments: when a's branch does
// not exist yet and another experiment's branch ran the same config and
// seed (the same run id) from the same prefix snapshot to the end, a's
// branch gets its tags and is created at its head (adopt); markBranch then
// commits a's marker on top. The data files are the donor's: same inputs,
// config and seed give the same files on one machine type.
func adoptArm(ctx context.Context, l *lake.Lake, a *Arm, prefixHead string, log io.Writer) error {
	steps := suffixSteps(a.Config)
	if len(steps) == 0 {
		return nil
	}
	run, seed := loop.RunID(a.Config), fmt.Sprintf("/s%d", a.Seed)
	return adopt(ctx, l, a.Branch, run, steps, log, "variant", func(name string) bool {
		return strings.HasSuffix(name, seed) && !strings.Contains(name, prefixDir)
	}, func(donor, head string) (bool, error) {
		row, err := runRow(ctx, l, head)
		if err != nil {
			return false, fmt.Errorf("the run of %s: %w", donor, err)
		}
		// Another prefix snapshot (another machine's, say) is another run.
		return row != nil && row.RunID == run && row.PrefixSnapshot == prefixHead, nil
	})
}

// runRow is the experiment_runs row of the snapshot id (nil if none).
func runRow(ctx context.Context, l *lake.Lake, id string) (*schemas.ExperimentRun, error) {
	m, err := l.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	if tf, ok := m.Tables[schemas.ExperimentRuns.Name]; !ok || tf.Rows == 0 {
		return nil, nil
	}
	rows, err := lake.ReadTable(ctx, l, m, schemas.ExperimentRuns)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("snapshot %s: %d experiment_runs rows, want 1", lake.ShortID(id), len(rows))
	}
	return &rows[0], nil
}

// markBranch makes the branch's first commit its experiment_runs row, so
// its lineage names the experiment and variant. A branch whose head
// already has it (a rerun) is left alone; one whose head is another
// experiment's finished run of the same config (adoptArm), or another
// arm's snapshot after steps this arm shares (adoptArmSteps), gets the row
// on top, naming the run it shares.
func markBranch(ctx context.Context, b *lake.Lake, p *Plan, a *Arm, prefixHead string) error {
	head, err := b.Head(ctx)
	if err != nil {
		return err
	}
	row, err := runRow(ctx, b, head)
	if err != nil {
		return fmt.Errorf("branch %s: %w", a.Branch, err)
	}
	if row == nil {
		return writeMarker(ctx, b, p, a, prefixHead, "")
	}
	// A rerun: the branch must be this arm's, not one an earlier version
	// of the file ran with other settings, unless its head is a step of
	// this arm's run that another arm committed (adoptArmSteps).
	if row.RunID != loop.RunID(a.Config) || row.PrefixSnapshot != prefixHead {
		if adopted, err := isOwnStep(ctx, b, a, head); err != nil {
			return err
		} else if adopted && row.PrefixSnapshot == prefixHead {
			return writeMarker(ctx, b, p, a, prefixHead, row.Branch)
		}
		return fmt.Errorf("branch %s already holds a run of another config or prefix (%s %s; now %s from %s): "+
			"the experiment file changed since; rename the experiment or delete its branches (cualake lake branch delete)",
			a.Branch, row.RunID, row.PrefixSnapshot, loop.RunID(a.Config), prefixHead)
	}
	if row.Experiment != p.Spec.Name || row.Variant != a.Variant {
		return writeMarker(ctx, b, p, a, prefixHead, row.Branch)
	}
	return nil
}

// isOwnStep says whether head is the done tag of one of a's steps: a
// branch adoptArmSteps created at another arm's snapshot.
func isOwnStep(ctx context.Context, l *lake.Lake, a *Arm, head string) (bool, error) {
	tags, err := l.Tags(ctx)
	if err != nil {
		return false, err
	}
	run := loop.RunID(a.Config)
	for _, s := range suffixSteps(a.Config) {
		if tags[loop.DoneTag(a.Branch, run, s.Key)] == head {
			return true, nil
		}
	}
	return false, nil
}

// writeMarker commits a's experiment_runs row on b: the branch's first
// commit, or (adoptedFrom set) its last, on top of the run it shares.
func writeMarker(ctx context.Context, b *lake.Lake, p *Plan, a *Arm, prefixHead, adoptedFrom string) error {
	over, err := json.Marshal(a.Overrides)
	if err != nil {
		return fmt.Errorf("overrides: %w", err)
	}
	cfg, err := json.Marshal(a.Config)
	if err != nil {
		return err
	}
	row := schemas.ExperimentRun{Experiment: p.Spec.Name, Variant: a.Variant, Seed: a.Seed, Branch: a.Branch,
		PrefixBranch: a.Prefix.Branch, PrefixSnapshot: prefixHead, Overrides: string(over), Config: string(cfg), RunID: loop.RunID(a.Config)}
	tx, err := b.Begin(ctx, "")
	if err != nil {
		return err
	}
	if err := lake.ReplaceTable(ctx, tx, schemas.ExperimentRuns, []schemas.ExperimentRun{row}); err != nil {
		return err
	}
	params := map[string]any{"experiment": p.Spec.Name, "variant": a.Variant, "seed": a.Seed, "overrides": a.Overrides}
	msg := fmt.Sprintf("experiment %s, variant %s, seed %d: forked from prefix %s", p.Spec.Name, a.Variant, a.Seed, a.Prefix.Branch)
	if adoptedFrom != "" {
		params["shared_from"] = adoptedFrom
		msg = fmt.Sprintf("experiment %s, variant %s, seed %d: the same run as %s (forked from prefix %s), shared", p.Spec.Name, a.Variant, a.Seed, adoptedFrom, a.Prefix.Branch)
	}
	_, err = tx.Commit(ctx, lake.CommitInfo{Stage: "experiment", Seed: a.Seed, Inputs: []string{prefixHead}, Params: params, Message: msg})
	return err
}

// lineLog writes whole lines from several branches, each prefixed, one
// line at a time.
type lineLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineLog) with(prefix string) io.Writer { return &prefixed{log: l, prefix: prefix} }

type prefixed struct {
	log    *lineLog
	prefix string
	buf    []byte // an unfinished line
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		p.log.mu.Lock()
		_, err := fmt.Fprintf(p.log.w, "[%s] %s\n", p.prefix, p.buf[:i])
		p.log.mu.Unlock()
		p.buf = p.buf[i+1:]
		if err != nil {
			return len(b), err
		}
	}
}
