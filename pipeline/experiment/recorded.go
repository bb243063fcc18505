package experiment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	return recordedDir + codeDir() + "/p" + stepsID(steps)
}

// armStepsTag names the snapshot of the last of steps, an arm's leading
// steps, run by this code version on a branch forked from the prefix
// snapshot fork. Unlike a prefix's, an arm's steps read what its prefix
// committed, so the fork is part of the name.
func armStepsTag(fork string, steps []loop.Step) string {
	h := sha256.Sum256([]byte(fork + "/" + stepsID(steps)))
	return recordedDir + codeDir() + "/a" + hex.EncodeToString(h[:])[:12]
}

// codeDir is lake.CodeVersion as one safe path element.
func codeDir() string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, lake.CodeVersion)
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
	return record(ctx, l, pre.Branch, pre.RunID, pre.Steps, func(n int) string { return stepsTag(pre.Steps[:n]) })
}

// recordArm does for a finished arm what recordSteps does for a prefix:
// another arm forked from the same prefix snapshot whose leading steps are
// the same (an arm of fewer iterations, or of other settings that reach
// only the later ones) then takes them (adoptArmSteps).
func recordArm(ctx context.Context, l *lake.Lake, a *Arm, fork string) error {
	steps := suffixSteps(a.Config)
	return record(ctx, l, a.Branch, loop.RunID(a.Config), steps, func(n int) string { return armStepsTag(fork, steps[:n]) })
}

// record tags the leading sequences of run's steps on branch, the first n
// under name(n): recordSteps and recordArm.
func record(ctx context.Context, l *lake.Lake, branch, run string, steps []loop.Step, name func(n int) string) error {
	tags, err := l.Tags(ctx)
	if err != nil {
		return err
	}
	got, ok := runTags(tags, branch, run, steps)
	if !ok || len(steps) == 0 {
		return nil // not finished: nothing to record yet
	}
	for i, s := range steps {
		id := got[s.Key]
		tag := name(i + 1)
		if cur, ok := tags[tag]; ok {
			if cur != id {
				return nil // recorded from another lineage: see above
			}
			continue
		}
		m, err := l.Snapshot(ctx, id)
		if err != nil {
			return fmt.Errorf("recording step %s of %s: %w", s.Key, branch, err)
		}
		if !loop.SameCode(m) {
			return nil
		}
		if start, ok := got[s.Key+loop.StartedSuffix]; ok {
			// Only timing reads a start tag: a race lost here is harmless.
			if _, err := l.Tag(ctx, tag+loop.StartedSuffix, start); err != nil && !errors.Is(err, lake.ErrExist) {
				return fmt.Errorf("recording step %s of %s: %w", s.Key, branch, err)
			}
		}
		if _, err := l.Tag(ctx, tag, id); errors.Is(err, lake.ErrExist) {
			return nil // another run recorded these steps first
		} else if err != nil {
			return fmt.Errorf("recording step %s of %s: %w", s.Key, branch, err)
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
	d, last, err := takeRecorded(ctx, l, pre.Branch, pre.RunID, pre.Steps, fromStem, func(n int) string { return stepsTag(pre.Steps[:n]) })
	if err != nil || d == 0 {
		return err
	}
	fmt.Fprintf(log, "steps: the first %d (to %s) are committed by an earlier experiment; shared (snapshot %s), not recomputed\n", d, pre.Steps[d-1].Key, lake.ShortID(last))
	return nil
}

// takeRecorded gives branch, which has none yet, the deepest recorded
// sequence of run's steps (tags named by name) when it is longer than
// atLeast steps and this code version committed it: done and start tags
// under run, then the branch at the last one's snapshot. It returns how
// many steps it took (0: none) and that snapshot.
func takeRecorded(ctx context.Context, l *lake.Lake, branch, run string, steps []loop.Step, atLeast int, name func(n int) string) (int, string, error) {
	if done, err := hasBranch(ctx, l, branch); err != nil || done {
		return 0, "", err
	}
	tags, err := l.Tags(ctx)
	if err != nil {
		return 0, "", err
	}
	got, d := recorded(tags, steps, name)
	if d == 0 || d <= atLeast {
		return 0, "", nil
	}
	last := got[steps[d-1].Key]
	if m, err := l.Snapshot(ctx, last); err != nil {
		return 0, "", fmt.Errorf("recorded steps of %s: %w", branch, err)
	} else if !loop.SameCode(m) {
		return 0, "", nil // a build that plays another version (tests)
	}
	if err := shareRun(ctx, l, branch, run, got, last); err != nil {
		return 0, "", fmt.Errorf("sharing recorded steps with %s: %w", branch, err)
	}
	return d, last, nil
}

// recorded returns the recorded sequences of steps, shallow first, up to
// the first that is not recorded: their snapshots (and start tags) by step
// key, as runTags gives them, and how many there are.
func recorded(tags map[string]string, steps []loop.Step, name func(n int) string) (map[string]string, int) {
	got := map[string]string{}
	d := 0
	for ; d < len(steps); d++ {
		tag := name(d + 1)
		id, ok := tags[tag]
		if !ok {
			break
		}
		got[steps[d].Key] = id
		if start, ok := tags[tag+loop.StartedSuffix]; ok {
			got[steps[d].Key+loop.StartedSuffix] = start
		}
	}
	return got, d
}

// adoptArmSteps gives a, which has no branch yet, the deepest leading
// sequence of its steps that another arm forked from the same prefix
// snapshot recorded (recordArm): their done and start tags under a's run,
// then a's branch at the last one's snapshot. markBranch then commits a's
// marker on top, and RunSteps runs the rest. Same steps from the same
// snapshot give the same data files on one machine type, so two arms that
// differ only after their first rounds compute those rounds once.
func adoptArmSteps(ctx context.Context, l *lake.Lake, a *Arm, fork string, log io.Writer) error {
	steps := suffixSteps(a.Config)
	d, last, err := takeRecorded(ctx, l, a.Branch, loop.RunID(a.Config), steps, 0, func(n int) string { return armStepsTag(fork, steps[:n]) })
	if err != nil || d == 0 {
		return err
	}
	fmt.Fprintf(log, "steps: the first %d of %d (to %s) are committed by another arm from this prefix; shared (snapshot %s), not recomputed\n",
		d, len(steps), steps[d-1].Key, lake.ShortID(last))
	return nil
}
