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

func doneTag(run, key string) string  { return "run/" + run + "/" + key }
func startTag(run, key string) string { return "run/" + run + "/" + key + ".started" }

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
	steps := Plan(c)
	run := RunID(c)
	tags, err := l.Tags(ctx)
	if err != nil {
		return nil, err
	}
	var total, doneW float64
	for _, s := range steps {
		total += s.Weight
	}
	start := time.Now()
	var spentW float64 // weight of steps run in this process, for the estimate
	var results []StepResult
	for i, s := range steps {
		if id, ok := tags[doneTag(run, s.Key)]; ok {
			results = append(results, StepResult{Key: s.Key, Snapshot: id, Resumed: true})
			doneW += s.Weight
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
			doneW += s.Weight
			continue
		}
		if head != "" {
			if _, ok := tags[startTag(run, s.Key)]; !ok {
				if _, err := l.Tag(ctx, startTag(run, s.Key), head); err != nil {
					return results, err
				}
			}
		}
		left := ""
		if spentW > 0 {
			rate := time.Since(start).Seconds() / spentW
			left = fmt.Sprintf(", about %s left", (time.Duration(rate*(total-doneW)) * time.Second).Round(time.Second))
		}
		fmt.Fprintf(log, "[%d/%d] %s (elapsed %s%s)\n", i+1, len(steps), s.Title, time.Since(start).Round(time.Second), left)
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
		results = append(results, StepResult{Key: s.Key, Snapshot: head, Seconds: time.Since(t0).Seconds()})
		doneW += s.Weight
		spentW += s.Weight
	}
	return results, nil
}
