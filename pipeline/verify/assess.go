package verify

import (
	"path"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
)

// assess sets each criterion's status from the recorded evidence the way
// the builtin Judge reads it: what the final screen shows decides; what
// only an earlier screen showed, or what shows but is not persisted (an
// unsaved buffer, a field being edited), leaves the criterion uncertain
// with a lean; without any of that, the action history may lean it.
func assess(in *Input, cs []Criterion) {
	screens := in.screens() // newest first
	for i := range cs {
		c := &cs[i]
		if c.Check == nil || c.Status != Uncertain {
			continue
		}
		decided := false
		sentLater := false // a newer screen showed sent mail: an older empty Sent folder is outdated
		for back, s := range screens {
			r := read(s, c.Check)
			if r.sent > 0 {
				sentLater = true
			}
			if !r.found || (r.sent == 0 && sentLater) {
				continue
			}
			if back > 0 && !r.ok && typedSince(in, back, c.Check) {
				continue // the agent typed the wanted text after this screen: it shows the state before
			}
			if back == 0 && !r.weak {
				c.Status = statusOf(r.ok)
				c.Note = "final screen: " + r.note
				if s.Screenshot != "" {
					c.Evidence = []string{s.Screenshot}
				}
			} else {
				c.lean, c.leanSrc = leanOf(r.ok), LeanStale
				c.Note = "earlier screen: " + r.note
				if back == 0 {
					c.Note = "final screen: " + r.note
				}
			}
			decided = true
			break
		}
		if decided {
			continue
		}
		if l := historyLean(in, c.Check); l != 0 {
			c.lean, c.leanSrc = l, LeanHistory
			c.Note = "action history suggests it"
		}
	}
}

// typedSince reports whether the actions taken at or after the screen back
// steps before the end typed the check's wanted text.
func typedSince(in *Input, back int, c *Check) bool {
	want := strings.TrimSpace(c.Want)
	if want == "" || c.Kind == KindExcludes {
		return false
	}
	for _, a := range in.Actions[max(0, len(in.Actions)-1-back):] {
		if a.Kind == action.Type && strings.Contains(a.Text, want) {
			return true
		}
	}
	return false
}

func statusOf(ok bool) string {
	if ok {
		return Success
	}
	return Failure
}

func leanOf(ok bool) int {
	if ok {
		return 1
	}
	return -1
}

// historyLean is what the typed text and keys suggest about a check.
func historyLean(in *Input, c *Check) int {
	typed := in.typed()
	contains := func(s string) bool {
		s = strings.TrimSpace(s)
		return s != "" && strings.Contains(typed, s)
	}
	switch c.Kind {
	case KindExists:
		if contains(path.Base(c.Path)) {
			return 1
		}
	case KindContent, KindIncludes:
		if contains(c.Want) || contains(firstLine(c.Want)) && contains(lastLine(c.Want)) {
			return 1
		}
	case KindSaved:
		if in.pressedSave() {
			return 1
		}
	case KindSetting:
		if contains(c.Want) && c.Want != "true" && c.Want != "false" {
			return 1
		}
	case KindMail:
		if contains(c.Want) {
			return 1
		}
	case KindCell, KindLookup:
		if contains(c.Want) {
			return 1
		}
	case KindClaim:
		if in.Claim == action.Fail {
			return 1
		}
		return -1
	}
	return 0
}

func firstLine(s string) string { l, _, _ := strings.Cut(strings.TrimSpace(s), "\n"); return l }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// claimCriteria adds what the agent's own ending says: giving up on a task
// the Judge could make concrete fails it; a task it could not make concrete
// is probably asking for something this desktop cannot do, which only the
// agent's report can settle (uncertain, leaning on that report).
func claimCriteria(in *Input, cs []Criterion) []Criterion {
	if len(cs) > 0 {
		if in.Claim == action.Fail {
			cs = append(cs[:min(len(cs), MaxCriteria-1)], Criterion{
				Text:   "The agent finished the task instead of reporting it infeasible",
				Status: Failure, Note: "the action history ends with fail", Check: &Check{Kind: KindClaim}})
		}
		return cs
	}
	c := Criterion{Text: "The request names nothing this desktop offers, so the task is infeasible and the agent reported it as such",
		Status: Uncertain, Check: &Check{Kind: KindClaim, Where: "the action history's last action"}}
	c.lean, c.leanSrc = historyLean(in, c.Check), LeanHistory
	c.Note = "only the agent's ending speaks to it"
	return []Criterion{c}
}
