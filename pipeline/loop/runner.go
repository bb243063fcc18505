package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/progress"
)

// DefaultReward is the rollout stage's reward source when none is named:
// the task's programmatic judge. The rollout command's flag default and
// RunID's rule read it, so the two cannot drift apart.
const DefaultReward = "judge"

// Executor runs one stage command against the lake (in-process, or as a
// cluster job) and returns when its snapshot is committed.
type Executor func(ctx context.Context, command, flags []string) error

// RunID identifies a config: the same config and seed resume the same run.
// A default spelled out names the same run as the default left out
// (rollout.reward DefaultReward is "", warmstart.coverage 1 is 0, warmstart.cover_by family is "", rft off is left out), so that an experiment variant setting it
// shares the run of one that does not; the empty form is hashed, which keeps
// the ids of runs committed before this rule.
func RunID(c Config) string {
	if c.Rollout.Reward == DefaultReward {
		c.Rollout.Reward = ""
	}
	if c.Warmstart.Coverage == 1 {
		c.Warmstart.Coverage = 0 // left out of the JSON, as before the field
	}
	if c.Warmstart.CoverBy == "family" {
		c.Warmstart.CoverBy = "" // the default: left out (omitempty), as before the field
	}
	if c.RFT.Iterations == 0 {
		c.RFT = RFTConfig{} // off: left out of the JSON (omitzero), as before the field
	}
	if c.RFT.Imitate == "both" {
		c.RFT.Imitate = "" // the default: left out (omitempty), as before the field
	}
	if c.RFT.Pass == "all" {
		c.RFT.Pass = "" // likewise
	}
	if c.RFT.Pick == "random" {
		c.RFT.Pick = "" // likewise
	}
	if c.RFT.Balance == "none" {
		c.RFT.Balance = "" // likewise
	}
	b, _ := json.Marshal(c)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:12]
}

// DoneTag names the tag that marks step key of run done on branch: main's
// runs keep run/<id>/<step>; a run on another branch B tags
// B/run/<id>/<step>, so that the same config run on two branches (an
// experiment's variants, or a rerun forked from a tag) never takes a step
// of one for the other's.
func DoneTag(branch, run, key string) string {
	if branch == "" || branch == lake.MainRef {
		return "run/" + run + "/" + key
	}
	return branch + "/run/" + run + "/" + key
}

// ErrOtherCodeVersion is returned when a run would resume from a step that
// another code version committed: its data may not be what this code
// computes (run ids hash the config, not the code), so a comparison would
// silently mix the two.
var ErrOtherCodeVersion = errors.New("committed by another code version")

// codeVersion is the version a resumed step must have been committed by:
// lake.CodeVersion, a variable only so that a test can play a newer build.
var codeVersion = lake.CodeVersion

// SameCode says whether this code version committed snapshot m, so that a
// run may resume from (or share) it.
func SameCode(m *lake.Manifest) bool { return m.CodeVersion == codeVersion }

// checkDone refuses to resume from done tags that a run cannot trust:
// those whose snapshots the branch no longer reaches (a branch deleted and
// created again keeps its old run's tags, since tags are immutable, and
// resuming from them would skip every step and leave the new branch
// without their commits), and those whose snapshots another code version
// committed (lake.CodeVersion; ErrOtherCodeVersion).
func checkDone(ctx context.Context, l *lake.Lake, br, run string, steps []Step, tags map[string]string) error {
	var reach map[string]bool
	for _, s := range steps {
		id, ok := tags[DoneTag(br, run, s.Key)]
		if !ok {
			continue
		}
		if reach == nil {
			log, err := l.Log(ctx, br, 0)
			if err != nil {
				return err
			}
			reach = map[string]bool{}
			for _, m := range log {
				reach[m.ID] = true
			}
		}
		if !reach[id] {
			return fmt.Errorf("step %s of run %s is tagged done at snapshot %s, which branch %s does not reach "+
				"(was the branch deleted and created again?): its tags still name that run; "+
				"use another branch (or experiment) name, or change the config", s.Key, run, lake.ShortID(id), br)
		}
		if err := checkCode(ctx, l, br, run, s.Key, id); err != nil {
			return err
		}
	}
	return nil
}

// checkCode refuses snapshot id as step key's commit unless this code
// version committed it (ErrOtherCodeVersion).
func checkCode(ctx context.Context, l *lake.Lake, br, run, key, id string) error {
	m, err := l.Snapshot(ctx, id)
	if err != nil {
		return fmt.Errorf("step %s of run %s: %w", key, run, err)
	}
	if SameCode(m) {
		return nil
	}
	fix := "run it again in a new lake (--lake) or on a new branch (--branch)"
	if br != "" && br != lake.MainRef {
		fix = fmt.Sprintf("delete the branch (cualake lake branch delete %s) and run again, or use a new lake (--lake)", br)
	}
	return fmt.Errorf("step %s of run %s on %s was %w (%s at snapshot %s; this is %s), so resuming would mix "+
		"the two versions' data: %s", key, run, orMain(br), ErrOtherCodeVersion, m.CodeVersion,
		lake.ShortID(id), codeVersion, fix)
}

func orMain(br string) string {
	if br == "" {
		return lake.MainRef
	}
	return br
}

// StartedSuffix makes a step's done tag its start tag: the branch head the
// step started from (a group's steps share it).
const StartedSuffix = ".started"

func startTag(branch, run, key string) string { return DoneTag(branch, run, key) + StartedSuffix }

// StepResult says what happened to one step.
type StepResult struct {
	Key      string  `json:"key"`
	Snapshot string  `json:"snapshot"`
	Resumed  bool    `json:"resumed"` // already done by an earlier run
	Seconds  float64 `json:"seconds"`
}

// Run executes the plan's steps in order, skipping those an earlier run of
// the same config finished. Progress is tagged in the lake: a step's start
// tag names the head it started from and its done tag the snapshot it
// committed, so a run killed at any point continues without redoing or
// duplicating a committed step.
func Run(ctx context.Context, l *lake.Lake, c Config, exec Executor, log io.Writer) ([]StepResult, error) {
	return RunSteps(ctx, l, RunID(c), Plan(c), exec, log)
}

// RunSteps is Run over any list of steps under run id run (an experiment
// runs a plan's shared prefix on one branch and the rest on each variant's),
// on the handle's branch.
func RunSteps(ctx context.Context, l *lake.Lake, run string, steps []Step, exec Executor, log io.Writer) ([]StepResult, error) {
	br := l.Branch()
	doneTag := func(run, key string) string { return DoneTag(br, run, key) }
	startTag := func(run, key string) string { return startTag(br, run, key) }
	tags, err := l.Tags(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDone(ctx, l, br, run, steps, tags); err != nil {
		return nil, err
	}
	weights := make([]float64, len(steps))
	for i, s := range steps {
		weights[i] = s.Weight
	}
	est := progress.NewEstimate(weights)
	start := time.Now()
	var results []StepResult
	for i := 0; i < len(steps); i++ {
		s := steps[i]
		if s.Group != "" {
			j := i + 1
			for j < len(steps) && steps[j].Group == s.Group {
				j++
			}
			rs, err := runGroup(ctx, l, run, steps, i, j, tags, exec, log, est, start)
			results = append(results, rs...)
			if err != nil {
				return results, err
			}
			i = j - 1
			continue
		}
		if id, ok := tags[doneTag(run, s.Key)]; ok {
			results = append(results, StepResult{Key: s.Key, Snapshot: id, Resumed: true})
			est.Skip(i)
			continue
		}
		head, _ := l.Head(ctx)
		if from, ok := tags[startTag(run, s.Key)]; ok && head != "" && head != from {
			// Started before and something was committed since: that commit
			// is this step's (the run is the lake's only writer).
			if err := checkCode(ctx, l, br, run, s.Key, head); err != nil {
				return results, err
			}
			if _, err := l.Tag(ctx, doneTag(run, s.Key), head); err != nil {
				return results, err
			}
			fmt.Fprintf(log, "[%d/%d] %s: committed by an interrupted run, not redone\n", i+1, len(steps), s.Title)
			results = append(results, StepResult{Key: s.Key, Snapshot: head, Resumed: true})
			est.Skip(i)
			continue
		}
		if head != "" {
			if _, ok := tags[startTag(run, s.Key)]; !ok {
				if _, err := l.Tag(ctx, startTag(run, s.Key), head); err != nil {
					return results, err
				}
			}
		}
		// From the first step on: the weights are seconds measured on the
		// demo machine, and the pace measured so far scales them.
		fmt.Fprintf(log, "[%d/%d] %s (elapsed %s, about %s left)\n", i+1, len(steps), s.Title,
			time.Since(start).Round(time.Second), est.Left().Round(time.Second))
		t0 := time.Now()
		if err := exec(ctx, s.Command, s.Flags); err != nil {
			return results, fmt.Errorf("step %s (%v): %w", s.Key, s.Command, err)
		}
		head, err = l.Head(ctx)
		if err != nil {
			return results, err
		}
		if head == "" {
			return results, errors.New("step " + s.Key + " committed nothing to an empty lake")
		}
		if _, err := l.Tag(ctx, doneTag(run, s.Key), head); err != nil {
			return results, err
		}
		tags[doneTag(run, s.Key)] = head
		took := time.Since(t0)
		results = append(results, StepResult{Key: s.Key, Snapshot: head, Seconds: took.Seconds()})
		est.Done(i, took)
	}
	return results, nil
}

// runGroup runs steps[i:j], one group, at once. All of them read the
// snapshot the group started from: its start tag (shared by the group's
// steps) names it, so a rerun after a kill reads exactly what the first
// run read, and a step's output never depends on when the others commit.
// Each commits by rebase (the group's steps write disjoint tables, or
// appends that commute). A step's commit is the snapshot after the start
// whose stage is the step's command (the steps of a group are different
// stages), which is how an interrupted run's commits are found again.
// If one step fails, the others are cancelled and waited for.
func runGroup(ctx context.Context, l *lake.Lake, run string, steps []Step, i, j int, tags map[string]string,
	exec Executor, log io.Writer, est *progress.Estimate, start time.Time) ([]StepResult, error) {
	br := l.Branch()
	group := steps[i:j]
	results := make([]StepResult, len(group))
	var from string
	for _, s := range group {
		if id, ok := tags[startTag(br, run, s.Key)]; ok {
			from = id
		}
	}
	if from == "" {
		head, err := l.Head(ctx)
		if err != nil {
			return nil, err
		}
		if head == "" {
			return nil, fmt.Errorf("group %s: the lake is empty; a group reads a committed snapshot", group[0].Group)
		}
		from = head
	}
	var todo []int
	for k, s := range group {
		if id, ok := tags[DoneTag(br, run, s.Key)]; ok {
			results[k] = StepResult{Key: s.Key, Snapshot: id, Resumed: true}
			est.Skip(i + k)
			continue
		}
		if id, err := committedSince(ctx, l, from, stageOf(s)); err != nil {
			return nil, err
		} else if id != "" {
			// Committed by an interrupted run before its done tag was written.
			if err := checkCode(ctx, l, br, run, s.Key, id); err != nil {
				return nil, err
			}
			if _, err := l.Tag(ctx, DoneTag(br, run, s.Key), id); err != nil {
				return nil, err
			}
			tags[DoneTag(br, run, s.Key)] = id
			fmt.Fprintf(log, "[%d/%d] %s: committed by an interrupted run, not redone\n", i+k+1, len(steps), s.Title)
			results[k] = StepResult{Key: s.Key, Snapshot: id, Resumed: true}
			est.Skip(i + k)
			continue
		}
		if _, ok := tags[startTag(br, run, s.Key)]; !ok {
			if _, err := l.Tag(ctx, startTag(br, run, s.Key), from); err != nil {
				return nil, err
			}
			tags[startTag(br, run, s.Key)] = from
		}
		todo = append(todo, k)
	}
	if len(todo) == 0 {
		return results, nil
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type done struct {
		k    int
		took time.Duration
		err  error
	}
	ch := make(chan done, len(todo))
	for _, k := range todo {
		s := group[k]
		fmt.Fprintf(log, "[%d/%d] %s (at once with the rest of %s; elapsed %s, about %s left)\n", i+k+1, len(steps), s.Title, s.Group,
			time.Since(start).Round(time.Second), est.Left().Round(time.Second))
		flags := append(append([]string{}, s.Flags...), "--in", from)
		go func() {
			t0 := time.Now()
			err := exec(gctx, s.Command, flags)
			ch <- done{k, time.Since(t0), err}
		}()
	}
	var errs []error
	for range todo {
		d := <-ch
		s := group[d.k]
		if d.err != nil {
			cancel() // the others' work is redone on the rerun, from the same snapshot
			errs = append(errs, fmt.Errorf("step %s (%v): %w", s.Key, s.Command, d.err))
			continue
		}
		id, err := committedSince(ctx, l, from, stageOf(s))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if id == "" {
			id = from // the step changed nothing: its snapshot is its input
		}
		if _, err := l.Tag(ctx, DoneTag(br, run, s.Key), id); err != nil {
			errs = append(errs, err)
			continue
		}
		tags[DoneTag(br, run, s.Key)] = id
		results[d.k] = StepResult{Key: s.Key, Snapshot: id, Seconds: d.took.Seconds()}
		est.Done(i+d.k, d.took)
	}
	if len(errs) > 0 {
		var kept []StepResult
		for _, r := range results {
			if r.Key != "" {
				kept = append(kept, r)
			}
		}
		return kept, errors.Join(errs...)
	}
	return results, nil
}

// stageOf is the stage name a step's command commits under.
func stageOf(s Step) string { return s.Command[0] }

// committedSince returns the newest snapshot of stage on the handle's
// branch after from (first parents, head back to from), or "" if none.
func committedSince(ctx context.Context, l *lake.Lake, from, stage string) (string, error) {
	id, err := l.Head(ctx)
	if err != nil {
		return "", err
	}
	for id != "" && id != from {
		m, err := l.Snapshot(ctx, id)
		if err != nil {
			return "", err
		}
		if m.Stage == stage {
			return id, nil
		}
		id = m.Parent
	}
	if id == "" {
		return "", fmt.Errorf("snapshot %s, where a group of steps started, is not an ancestor of the branch head", from)
	}
	return "", nil
}
