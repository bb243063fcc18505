package simdesk

import (
	"fmt"
	"image"
	"slices"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
	"github.com/cualake/cualake/schemas"
)

// Planner goals on the settings panel, the mail client and windows.

// settingGoal sets one setting through its control.
type settingGoal struct {
	key, value string
	crit       int
}

func (g *settingGoal) done(p *planner, d *Desktop) bool { return p.holds(d, g.crit) }

func (g *settingGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	if a, ok, err := focusApp(d, "settings"); ok || err != nil {
		return a, err
	}
	st := &d.S.Settings
	def := settingByKey(g.key)
	page := pageOf(g.key)
	if st.Edit != nil && st.EditKey != g.key {
		return key("escape"), nil
	}
	if st.Page != page.ID {
		return clickID(d, action.Click, "settings/page:"+page.ID)
	}
	id := "settings/set:" + g.key
	n := d.View().Find(id)
	if n == nil {
		idx := slices.Index(page.Settings, def)
		l := layoutSettings(d.contentRect("settings"))
		return scrollToward(d, "settings/area", idx, clampScroll(st.Scroll, l.visible, len(page.Settings)), l.visible, 1)
	}
	raw, _ := d.S.settingRaw(g.key)
	switch def.Kind {
	case KindToggle:
		return pointAction(d, action.Click, n.Center()), nil
	case KindChoice:
		if st.Open != g.key {
			return pointAction(d, action.Click, n.Center()), nil
		}
		return clickID(d, action.Click, "settings/pop:opt:"+g.key+":"+strconv.Itoa(slices.Index(def.Options, g.value)))
	case KindText:
		if st.Edit == nil {
			return pointAction(d, action.Click, n.Center()), nil
		}
		return fillField(st.Edit, g.value, true), nil
	}
	want, _ := strconv.Atoi(g.value)
	have, _ := strconv.Atoi(raw)
	if st.EditKey == g.key && abs(want-have) <= 12 {
		k := "right"
		if want < have {
			k = "left"
		}
		return action.KeyAction(k, abs(want-have)), nil
	}
	x := n.Rect.Min.X + want*n.Rect.Dx()/100
	return pointAction(d, action.Click, image.Pt(x, n.Center().Y)), nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// mailGoal composes (or replies) and sends one message.
type mailGoal struct {
	to, cc, subject *string
	body            *string
	incl            []string
	atts            []string
	hasAtts         bool
	crit            []int
}

func (g *mailGoal) add(s critSpec) error {
	g.crit = append(g.crit, s.i)
	if s.g.Field == "attachments" {
		l, ok := s.want.([]any)
		if !ok {
			return fmt.Errorf("%w: criterion %d: attachments want a list", ErrNoPlan, s.i)
		}
		g.hasAtts = true
		for _, e := range l {
			p, err := vfs.Clean(judge.Text(e))
			if err != nil {
				return fmt.Errorf("%w: criterion %d: %v", ErrNoPlan, s.i, err)
			}
			g.atts = append(g.atts, p)
		}
		return nil
	}
	if s.g.Field == "body" && (s.incl != nil || s.excl != nil) {
		g.incl = append(g.incl, s.incl...)
		return nil
	}
	if s.incl != nil || s.excl != nil {
		// An include rule on a header field: typing the included text
		// alone satisfies it.
		v := strings.Join(s.incl, " ")
		s.want = v
	}
	v := judge.Text(s.want)
	switch s.g.Field {
	case "to":
		g.to = &v
	case "cc":
		g.cc = &v
	case "subject":
		g.subject = &v
	case "body":
		g.body = &v
	}
	return nil
}

func (g *mailGoal) done(p *planner, d *Desktop) bool { return p.holds(d, g.crit...) }

// replyTo returns the inbox message the goal answers ("Re: <subject>"), or
// -1 when a fresh message fits better.
func (g *mailGoal) replyTo(m *MailState) int {
	if g.subject == nil || g.body != nil || !strings.HasPrefix(*g.subject, "Re: ") {
		return -1
	}
	for i, msg := range m.Inbox {
		if "Re: "+msg.Subject == *g.subject && (g.to == nil || *g.to == msg.From) {
			return i
		}
	}
	return -1
}

func (g *mailGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	if a, ok, err := focusApp(d, "mail"); ok || err != nil {
		return a, err
	}
	m := &d.S.Mail
	c := m.Compose
	if dl := m.Dialog; dl != nil {
		if dl.Kind == "attach" && dl.Error == "" && c != nil {
			for _, a := range g.atts {
				if !slices.Contains(c.Attachments, a) {
					return fillField(&dl.Field, vfs.Short(a), true), nil
				}
			}
		}
		return key("escape"), nil
	}
	if c == nil {
		if i := g.replyTo(m); i >= 0 {
			if m.Folder != "inbox" {
				return clickID(d, action.Click, "mail/folder:inbox")
			}
			if m.Selected != i {
				return clickID(d, action.Click, "mail/msg:"+strconv.Itoa(i))
			}
			return clickID(d, action.Click, "mail/reply")
		}
		return clickID(d, action.Click, "mail/compose")
	}
	for _, f := range []struct {
		name string
		want *string
		have *Field
	}{{"to", g.to, &c.To}, {"cc", g.cc, &c.Cc}, {"subject", g.subject, &c.Subject}} {
		if f.want == nil || f.have.Text == *f.want {
			continue
		}
		if c.Focus != f.name {
			return clickID(d, action.Click, "mail/"+f.name)
		}
		return fillField(f.have, *f.want, false), nil
	}
	body := c.Body.Text()
	if g.body != nil && body != *g.body {
		if c.Focus != "body" {
			return clickID(d, action.Click, "mail/body")
		}
		switch {
		case c.Body.All && *g.body == "":
			return key("backspace"), nil
		case c.Body.All || body == "":
			return typeText(*g.body), nil
		}
		return hotkey("ctrl", "a"), nil
	}
	var missing []string
	for _, s := range g.incl {
		if !strings.Contains(body, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		if c.Focus != "body" || c.Body.All {
			// Click the start of the body: new text goes above any quote.
			n := d.View().Find("mail/body")
			if n == nil {
				return schemas.Action{}, fmt.Errorf("mail body is not on screen")
			}
			return pointAction(d, action.Click, image.Pt(n.Rect.Min.X+8, n.Rect.Min.Y+4+lineH/2)), nil
		}
		text := strings.Join(missing, "\n")
		if body != "" && c.Body.Line == 0 && c.Body.Col == 0 {
			text += "\n"
		}
		return typeText(text), nil
	}
	for _, a := range g.atts {
		if !slices.Contains(c.Attachments, a) {
			return clickID(d, action.Click, "mail/attach")
		}
	}
	return clickID(d, action.Click, "mail/send")
}

// windowGoal opens, closes or focuses an app window.
type windowGoal struct {
	app          string
	open, active bool
	crit         int
}

func (g *windowGoal) done(p *planner, d *Desktop) bool { return p.holds(d, g.crit) }

func (g *windowGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	if appByID(g.app) == nil {
		return schemas.Action{}, fmt.Errorf("%w: unknown app %q", ErrNoPlan, g.app)
	}
	if g.active || g.open {
		return clickID(d, action.Click, "dock/"+g.app)
	}
	// Closing: raise the window first (its close button may be covered),
	// and answer an unsaved-changes prompt by not saving.
	if d.S.Focused() != g.app {
		return clickID(d, action.Click, "dock/"+g.app)
	}
	if appByID(g.app).modal(&d.S) {
		if d.View().Find(g.app+"/dlg:btn:discard") != nil {
			return clickID(d, action.Click, g.app+"/dlg:btn:discard")
		}
		return key("escape"), nil
	}
	return clickID(d, action.Click, g.app+"/close")
}
