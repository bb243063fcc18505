package verify

import (
	"fmt"
	"strings"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// DefaultWindow is how many of the last observations the Judge sees.
const DefaultWindow = 3

// StateMime is the mime type of a saved simulator state blob.
const StateMime = "application/vnd.cualake.simdesk-state+json"

// Input is what a verification attempt knows of one finished episode. The
// Judge sees the instruction, the action history and the last screens;
// the Probe gets the terminal state; Outcome is only used for the reward.
type Input struct {
	Task         schemas.Task
	TrajectoryID string
	History      []string         // one line per action: "3. type \"hello\""
	Actions      []schemas.Action // the same actions, typed
	Screens      []*Screen        // the last observations, oldest first (nil when unreadable)
	Images       [][]byte         // their PNG bytes, aligned with Screens (nil when tree-only)
	Claim        string           // how the agent ended: done, fail or "" (turn limit)
	FinalState   []byte           // the terminal simulator state, nil when none was saved
	Outcome      string           // the executable outcome, "" when unknown
}

// BlobFunc returns a blob's bytes by hash.
type BlobFunc func(hash string) ([]byte, error)

// NewInput assembles an Input from a trajectory, its steps (in order) and a
// blob reader; window is the number of last observations kept.
func NewInput(task schemas.Task, traj schemas.Trajectory, steps []schemas.Step, blob BlobFunc, window int) (*Input, error) {
	if window <= 0 {
		window = DefaultWindow
	}
	in := &Input{Task: task, TrajectoryID: traj.TrajectoryID, Outcome: ExecutableOutcome(traj)}
	for i, st := range steps {
		a := st.ActionOf()
		in.Actions = append(in.Actions, a)
		in.History = append(in.History, fmt.Sprintf("%d. %s", i+1, describe(a, st.RawAction)))
		if a.Kind == action.Done || a.Kind == action.Fail {
			in.Claim = a.Kind
		}
	}
	first := max(0, len(steps)-window)
	for _, st := range steps[first:] {
		var sc *Screen
		if st.A11y != "" {
			b, err := blob(st.A11y)
			if err != nil {
				return nil, fmt.Errorf("trajectory %s step %d: accessibility tree: %w", traj.TrajectoryID, st.Step, err)
			}
			if s, err := ParseScreen(b); err == nil { // an unreadable tree (OSWorld XML) leaves the screen blank
				sc = s
			}
		}
		var png []byte
		if st.Observation != "" {
			if sc != nil {
				sc.Screenshot = st.Observation
			}
			// A nil blob means the caller did not load screenshot bytes
			// (the builtin Judge reads trees only).
			b, err := blob(st.Observation)
			if err != nil {
				return nil, fmt.Errorf("trajectory %s step %d: screenshot: %w", traj.TrajectoryID, st.Step, err)
			}
			png = b
		}
		in.Screens = append(in.Screens, sc)
		in.Images = append(in.Images, png)
	}
	if traj.FinalState != "" {
		b, err := blob(traj.FinalState)
		if err != nil {
			return nil, fmt.Errorf("trajectory %s: final state: %w", traj.TrajectoryID, err)
		}
		in.FinalState = b
	}
	return in, nil
}

// InputFromEpisode assembles the Input of a rollout episode from the blobs
// it carries.
func InputFromEpisode(ep *rollout.Episode, window int) (*Input, error) {
	blobs := make(map[string][]byte, len(ep.Blobs))
	for _, b := range ep.Blobs {
		blobs[b.Hash] = b.Bytes
	}
	get := func(h string) ([]byte, error) {
		b, ok := blobs[h]
		if !ok {
			return nil, fmt.Errorf("blob %s is not in the episode", h)
		}
		return b, nil
	}
	return NewInput(ep.Task, ep.Trajectory, ep.Steps, get, window)
}

// describe writes an action the way the Judge's history shows it.
func describe(a schemas.Action, raw string) string {
	if s, err := action.Format(a); err == nil {
		return s
	}
	if raw != "" {
		return raw
	}
	return a.Kind
}

// typed returns everything the agent typed, in order.
func (in *Input) typed() string {
	var b strings.Builder
	for _, a := range in.Actions {
		if a.Kind == action.Type {
			b.WriteString(a.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// pressedSave reports whether the agent pressed a save shortcut after it
// last typed.
func (in *Input) pressedSave() bool {
	saved := false
	for _, a := range in.Actions {
		switch a.Kind {
		case action.Type:
			saved = false
		case action.Hotkey:
			k := strings.ToLower(strings.Join(a.Keys, "+"))
			if k == "ctrl+s" || k == "ctrl+shift+s" {
				saved = true
			}
		}
	}
	return saved
}

// screens returns the recorded screens newest first.
func (in *Input) screens() []*Screen {
	out := make([]*Screen, 0, len(in.Screens))
	for i := len(in.Screens) - 1; i >= 0; i-- {
		out = append(out, in.Screens[i])
	}
	return out
}
