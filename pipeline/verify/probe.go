package verify

import (
	"context"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
	"github.com/cualake/cualake/schemas"
)

// ProbeRequest asks a Probe to inspect the live environment for the
// criteria the Judge left uncertain.
type ProbeRequest struct {
	Task     schemas.Task
	Live     *Live
	Criteria []Criterion // the Judge's criteria with their statuses
	Order    []int       // indices of the criteria to check, first first
	Budget   int         // GUI steps this round
}

// ProbeReport is what one Probe round found: the criteria with updated
// statuses, notes and evidence hashes, and the evidence screenshots.
// Steps, tokens and refusals are counted by the Live environment.
type ProbeReport struct {
	Criteria []Criterion
	Evidence []schemas.Blob
	Tokens   int // model tokens (the openai Probe), or the approximate tokens the builtin Probe read and wrote
}

// Probe inspects a live environment. Implementations must act only
// through Live.Act.
type Probe interface {
	Probe(ctx context.Context, req ProbeRequest) (ProbeReport, error)
}

// BuiltinProbe is the frozen GUI Probe of the simulator: for each criterion
// in the order the Judge gave, it opens the app, folder, file, settings
// page or mail folder the criterion names through GUI actions (dock,
// places, double-clicks, page tabs, scrolling), reads what becomes visible
// in the accessibility tree, and sets the status. It stops a round when the
// step budget is spent or, with StopOnFailure, at the first failed
// criterion (one counterexample settles the verdict).
type BuiltinProbe struct {
	StopOnFailure bool
}

// Probe implements Probe.
func (p BuiltinProbe) Probe(ctx context.Context, req ProbeRequest) (rep ProbeReport, err error) {
	rep = ProbeReport{Criteria: cloneCriteria(req.Criteria)}
	start, tokens := req.Live.Steps(), req.Live.Tokens()
	defer func() { rep.Tokens = req.Live.Tokens() - tokens }()
	left := func() int { return req.Budget - (req.Live.Steps() - start) }
	for _, i := range req.Order {
		if i < 0 || i >= len(rep.Criteria) {
			continue
		}
		c := &rep.Criteria[i]
		if c.Status != Uncertain {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if left() <= 0 {
			break
		}
		r, err := inspect(req.Live, c.Check, left)
		if err != nil {
			return rep, err
		}
		c.tried = true
		if !r.found || r.weak {
			c.Note = "probe: " + r.note
			if r.found {
				c.lean, c.leanSrc = leanOf(r.ok), LeanStale
			}
			continue
		}
		c.Status, c.Note = statusOf(r.ok), "probe: "+r.note
		shot, ok, err := req.Live.Shot()
		if err != nil {
			return rep, err
		}
		if ok {
			c.Evidence = append(c.Evidence, shot.Hash)
			if !slices.ContainsFunc(rep.Evidence, func(b schemas.Blob) bool { return b.Hash == shot.Hash }) {
				rep.Evidence = append(rep.Evidence, shot)
			}
		}
		if c.Status == Failure && p.StopOnFailure {
			break
		}
	}
	return rep, nil
}

// navState is what one inspection remembers between steps.
type navState struct {
	lastNames []string // the listing before the last scroll
	scrolls   int
	opened    bool // the file was double-clicked
	raised    bool // the app's window was brought to the front
	dialogs   int  // dialogs cancelled
	unsaved   bool // one of them asked to save unsaved changes
}

// missingPrefix marks a navigation that found the target does not exist.
const missingPrefix = "missing: "

// inspect walks the GUI toward a check's evidence, one action at a time,
// until it reads it, gets stuck or runs out of steps.
func inspect(l *Live, c *Check, left func() int) (reading, error) {
	if c == nil || c.Kind == KindClaim || c.Kind == KindGeneric {
		return reading{note: "no GUI location to inspect for this criterion"}, nil
	}
	if c.Kind == KindMail && c.Field == "cc" {
		return reading{note: "the Sent view does not show Cc"}, nil
	}
	st := &navState{}
	for {
		s, err := l.Screen()
		if err != nil {
			return reading{}, err
		}
		if r := read(s, c); r.found && settled(s, c) {
			if r.weak && c.Kind == KindSetting {
				// Live, a field still in edit mode is a value never applied.
				r = seen(false, r.note+", so the value is not applied")
			}
			return r, nil
		}
		a, stuck := next(s, c, st)
		if what, ok := strings.CutPrefix(stuck, missingPrefix); ok {
			// A missing file or folder settles every check on it.
			return seen(c.Kind == KindAbsent || c.Kind == KindNoExtIn, what+" does not exist"), nil
		}
		if stuck != "" {
			return reading{note: stuck}, nil
		}
		if left() <= 0 {
			return reading{note: "the step budget ran out before the evidence was visible"}, nil
		}
		why, err := l.Act(a)
		if err != nil {
			return reading{}, err
		}
		if why != "" {
			return reading{note: "refused: " + why}, nil
		}
	}
}

// settled reports whether what the screen shows is the Probe's answer
// (the app in question is on top, not a stale glimpse behind a window).
func settled(s *Screen, c *Check) bool {
	switch c.Kind {
	case KindSaved:
		app := appFor(c.Path)
		if c.Path == "" {
			app = "editor"
		}
		return s.Window(app) == nil || s.Top() == app
	}
	return true
}

// next is the Probe's navigation policy: the next action toward the
// evidence of c, or why it cannot get there.
func next(s *Screen, c *Check, st *navState) (schemas.Action, string) {
	switch c.Kind {
	case KindExists, KindAbsent:
		return toFolder(s, path.Dir(c.Path), path.Base(c.Path), st)
	case KindNoExtIn:
		return toFolder(s, c.Path, "", st)
	case KindSaved:
		app := appFor(c.Path)
		if c.Path == "" {
			app = "editor"
		}
		if s.Window(app) != nil && s.Top() != app {
			return clickID(s, "dock/"+app)
		}
		return schemas.Action{}, "the " + app + " window shows no status"
	case KindContent, KindIncludes, KindExcludes:
		return toDocument(s, c.Path, "editor", st)
	case KindCell, KindLookup, KindSorted, KindTable:
		a, why := toDocument(s, c.Path, "sheet", st)
		if why != "open" {
			return a, why
		}
		if c.Kind == KindCell && c.Raw {
			if n := s.Find("sheet/cell:" + c.Cell); n != nil {
				return clickAt(action.Click, n), ""
			}
		}
		return schemas.Action{}, "the sheet's cells are not all visible"
	case KindSetting:
		return toSetting(s, c.Key, st)
	case KindMail:
		return toSent(s, st)
	}
	return schemas.Action{}, "no GUI location to inspect for this criterion"
}

func clickID(s *Screen, id string) (schemas.Action, string) {
	n := s.Find(id)
	if n == nil {
		return schemas.Action{}, id + " is not visible"
	}
	return clickAt(action.Click, n), ""
}

func scrollOver(n *Node, dir string, amount int) schemas.Action {
	return action.ScrollAt(dir, amount, n.Center[0], n.Center[1])
}

var placeDirs = []string{vfs.Home + "/Desktop", vfs.Home + "/Documents", vfs.Home + "/Downloads", vfs.Home + "/Pictures", vfs.Home}

// toFolder brings the file manager to dir and, when name is given, scrolls
// until it is listed or the listing ends.
func toFolder(s *Screen, dir, name string, st *navState) (schemas.Action, string) {
	if s.Top() != "files" {
		return clickID(s, "dock/files")
	}
	l, ok := filesListing(s)
	if !ok {
		return schemas.Action{}, "the file manager shows no listing"
	}
	if l.dir != dir {
		st.lastNames, st.scrolls = nil, 0
		if slices.Contains(placeDirs, dir) {
			return clickID(s, "files/place:"+dir)
		}
		if strings.HasPrefix(dir, l.dir+"/") {
			comp, _, _ := strings.Cut(strings.TrimPrefix(dir, l.dir+"/"), "/")
			if n := s.Find("files/item:" + comp); n != nil {
				return clickAt(action.DoubleClick, n), ""
			}
			if l.complete || slices.Equal(st.lastNames, l.names) {
				return schemas.Action{}, missingPrefix + vfs.Short(path.Join(l.dir, comp))
			}
			st.lastNames = l.names
			return scrollOver(s.Find("files/list"), "down", 5), ""
		}
		for _, p := range placeDirs {
			if dir == p || strings.HasPrefix(dir, p+"/") {
				return clickID(s, "files/place:"+p)
			}
		}
		return schemas.Action{}, "no place leads to " + vfs.Short(dir)
	}
	// In the folder: the listing is read; scroll for more when needed.
	if l.complete || (name != "" && slices.Contains(l.names, name)) {
		return schemas.Action{}, "the listing is read but shows nothing conclusive"
	}
	if st.scrolls > 0 && slices.Equal(st.lastNames, l.names) {
		if name != "" {
			return schemas.Action{}, missingPrefix + vfs.Short(path.Join(dir, name))
		}
		return schemas.Action{}, "the listing ends without settling it"
	}
	st.lastNames = l.names
	st.scrolls++
	return scrollOver(s.Find("files/list"), "down", 5), ""
}

// toDocument brings the document at p into app (the editor or Sheet): it
// raises the window when it is open, else opens the file from the file
// manager, cancelling dialogs in the way. It answers why "open" once the
// document is on top.
func toDocument(s *Screen, p, app string, st *navState) (schemas.Action, string) {
	if s.Top() == app {
		st.raised = true // the app's document has been looked at
	}
	if s.Window(app) != nil && s.Top() != app && !st.raised {
		st.raised = true
		return clickID(s, "dock/"+app)
	}
	if d := s.dialogOf(app); d != nil && s.Top() == app {
		if st.dialogs >= 2 {
			return schemas.Action{}, "a dialog stays open in the " + app
		}
		st.dialogs++
		if d.Name == "Unsaved Changes" {
			st.unsaved = true
		}
		return clickID(s, app+"/dlg:btn:cancel")
	}
	if v, ok := document(s, app); ok && (p == "" || v.path == p) && s.Top() == app {
		return schemas.Action{}, "open"
	}
	switch {
	case p == "":
		return schemas.Action{}, "no document is open in the " + app
	case st.unsaved:
		return schemas.Action{}, "opening " + short(p) + " would drop unsaved changes in the " + app
	case st.opened:
		return schemas.Action{}, "opening " + short(p) + " did not show it"
	}
	if s.Top() == "files" {
		if l, ok := filesListing(s); ok && l.dir == path.Dir(p) {
			if n := s.Find("files/item:" + path.Base(p)); n != nil {
				st.opened = true
				return clickAt(action.DoubleClick, n), ""
			}
			if l.complete {
				return schemas.Action{}, missingPrefix + short(p)
			}
		}
	}
	return toFolder(s, path.Dir(p), path.Base(p), st)
}

// toSetting opens the setting's page and scrolls its row into view.
func toSetting(s *Screen, key string, st *navState) (schemas.Action, string) {
	if s.Top() != "settings" {
		return clickID(s, "dock/settings")
	}
	var page *simdesk.SettingsPage
	for _, p := range simdesk.Pages {
		for _, d := range p.Settings {
			if d.Key == key {
				page = p
			}
		}
	}
	if page == nil {
		return schemas.Action{}, "setting " + key + " is not in Settings"
	}
	area := s.Find("settings/area")
	if area == nil || area.Name != page.Title {
		st.scrolls = 0
		return clickID(s, "settings/page:"+page.ID)
	}
	if st.scrolls >= 6 {
		return schemas.Action{}, "the setting did not scroll into view"
	}
	// Scroll toward the row: up when it is above the first visible one.
	want, first := -1, -1
	for i, d := range page.Settings {
		if d.Key == key {
			want = i
		}
		if first < 0 && s.Find("settings/set:"+d.Key) != nil {
			first = i
		}
	}
	dir := "down"
	if first >= 0 && want < first {
		dir = "up"
	}
	st.scrolls++
	return scrollOver(area, dir, 2), ""
}

// toSent opens Mail's Sent folder and selects the newest message.
func toSent(s *Screen, st *navState) (schemas.Action, string) {
	if s.Top() != "mail" {
		return clickID(s, "dock/mail")
	}
	n, ok := sentCount(s)
	if !ok {
		return schemas.Action{}, "the mail folders are not visible"
	}
	if f := s.Find("mail/folder:sent"); f != nil && !f.Has("selected") {
		return clickAt(action.Click, f), ""
	}
	id := "mail/msg:" + strconv.Itoa(n-1)
	if m := s.Find(id); m != nil {
		if m.Has("selected") {
			return schemas.Action{}, "the newest sent message is shown but says nothing about this"
		}
		return clickAt(action.Click, m), ""
	}
	if st.scrolls >= 10 {
		return schemas.Action{}, "the newest sent message did not scroll into view"
	}
	st.scrolls++
	return scrollOver(s.Find("mail/list"), "down", 3), ""
}
