package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
)

// Recorded steps let an experiment share leading steps that another
// experiment committed: the warm start of a new file whose variants all
// differ from an old file's in the initial pass, say. Stems share within
// one plan and adoptPrefix shares whole prefixes; neither sees the leading
// steps of another experiment's prefix. So every finished prefix
// tags each of its leading step sequences by their hash (stepsTag), and a
// prefix that has no branch yet adopts the deepest one recorded.

// recordedDir is where those tags live. No experiment is called
// "_steps" (checkName), so no branch can take the name.
const recordedDir = "exp/_steps/"

// stepsTag names the snapshot of the last of steps, run in that order from
// any fork point by this code version. The hash covers every step's key,
// command and flags, the seed's included, so equal names mean equal work.
func stepsTag(steps []loop.Step) string {
	v := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, lake.CodeVersion)
	return recordedDir + v + "/p" + stepsID(steps)
}

// recordSteps tags pre's leading step sequences, shallow first, at the
// snapshots its run's done tags name (and their start tags beside them).
// Tags are immutable and the first record wins: where a sequence is
// already recorded at another snapshot (the same steps run twice before
// this existed, or two runs at once), the deeper sequences of pre are not
// recorded, so that every recorded sequence's steps lie on one lineage,
// which a prefix adopting them needs (loop's checkDone). Steps another
// code version committed are not recorded.
func recordSteps(ctx context.Context, l *lake.Lake, pre *Prefix) error {
	tags, err := l.Tags(ctx)
	if err != nil {
		return err
	}
	got, ok := runTags(tags, pre.Branch, pre.RunID, pre.Steps)
	if !ok {
		return nil // not finished: nothing to record yet
	}
	for i, s := range pre.Steps {
		id := got[s.Key]
		name := stepsTag(pre.Steps[:i+1])
		if cur, ok := tags[name]; ok {
			if cur != id {
				return nil // recorded from another lineage: see above
			}
			continue
		}
		m, err := l.Snapshot(ctx, id)
		if err != nil {
			return fmt.Errorf("recording step %s of %s: %w", s.Key, pre.Branch, err)
		}
		if !loop.SameCode(m) {
			return nil
		}
		if start, ok := got[s.Key+loop.StartedSuffix]; ok {
			// Only timing reads a start tag: a race lost here is harmless.
			if _, err := l.Tag(ctx, name+loop.StartedSuffix, start); err != nil && !errors.Is(err, lake.ErrExist) {
				return fmt.Errorf("recording step %s of %s: %w", s.Key, pre.Branch, err)
			}
		}
		if _, err := l.Tag(ctx, name, id); errors.Is(err, lake.ErrExist) {
			return nil // another run recorded these steps first
		} else if err != nil {
			return fmt.Errorf("recording step %s of %s: %w", s.Key, pre.Branch, err)
		}
	}
	return nil
}

// adoptRecorded gives pre, which has no branch yet, the deepest leading
// sequence of its steps that some experiment recorded, if it is longer
// than fromStem steps (what pre's own stem will give it): their done and start
// tags under pre's run, then pre's branch at the last one's snapshot, from
// which RunSteps resumes them and runs the rest.
func adoptRecorded(ctx context.Context, l *lake.Lake, pre *Prefix, fromStem int, log io.Writer) error {
	if done, err := hasBranch(ctx, l, pre.Branch); err != nil || done {
		return err
	}
	tags, err := l.Tags(ctx)
	if err != nil {
		return err
	}
	// The recorded sequences of pre's steps, shallow first, up to the
	// first that is not recorded.
	got := map[string]string{}
	d := 0
	for ; d < len(pre.Steps); d++ {
		s, name := pre.Steps[d], stepsTag(pre.Steps[:d+1])
		id, ok := tags[name]
		if !ok {
			break
		}
		got[s.Key] = id
		if start, ok := tags[name+loop.StartedSuffix]; ok {
			got[s.Key+loop.StartedSuffix] = start
		}
	}
	if d <= fromStem {
		return nil
	}
	last := got[pre.Steps[d-1].Key]
	if m, err := l.Snapshot(ctx, last); err != nil {
		return fmt.Errorf("recorded steps of %s: %w", pre.Branch, err)
	} else if !loop.SameCode(m) {
		return nil // a build that plays another version (tests)
	}
	if err := shareRun(ctx, l, pre.Branch, pre.RunID, got, last); err != nil {
		return fmt.Errorf("sharing recorded steps with %s: %w", pre.Branch, err)
	}
	fmt.Fprintf(log, "steps: the first %d (to %s) are committed by an earlier experiment; shared (snapshot %s), not recomputed\n", d, pre.Steps[d-1].Key, lake.ShortID(last))
	return nil
}
