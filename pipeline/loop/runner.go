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

// Executor runs one stage command against the lake (in-process, or as a
// cluster job) and returns when its snapshot is committed.
type Executor func(ctx context.Context, command, flags []string) error

// RunID identifies a config: the same config and seed resume the same run.
func RunID(c Config) string {
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

func startTag(branch, run, key string) string { return DoneTag(branch, run, key) + ".started" }

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
	weights := make([]float64, len(steps))
	for i, s := range steps {
		weights[i] = s.Weight
	}
	est := progress.NewEstimate(weights)
	start := time.Now()
	var results []StepResult
	for i, s := range steps {
		if id, ok := tags[doneTag(run, s.Key)]; ok {
			results = append(results, StepResult{Key: s.Key, Snapshot: id, Resumed: true})
			est.Skip(i)
			continue
		}
		head, _ := l.Head(ctx)
		if from, ok := tags[startTag(run, s.Key)]; ok && head != "" && head != from {
			// Started before and something was committed since: that commit
			// is this step's (the run is the lake's only writer).
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
