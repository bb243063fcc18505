package simdesk

import (
	"fmt"
	"image"
	"path"
	"slices"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// mailApp is a mail client: read the inbox, compose, reply, forward,
// attach files and send.
type mailApp struct{}

func (mailApp) id() string   { return "mail" }
func (mailApp) name() string { return "Mail" }

// title is Thunderbird's: the folder, or "Write: subject" while composing.
func (mailApp) title(s *State) string {
	if c := s.Mail.Compose; c != nil {
		subject := c.Subject.Text
		if strings.TrimSpace(subject) == "" {
			subject = "(no subject)"
		}
		return "Write: " + subject + " - Thunderbird"
	}
	if s.Mail.Folder == "sent" {
		return "Sent - Mozilla Thunderbird"
	}
	return "Inbox - Mozilla Thunderbird"
}

func (mailApp) menus() []menuDef {
	return []menuDef{
		{"File", []menuItem{{"New Message", "Ctrl+N", "compose"}, sep(), {"Close", "Ctrl+W", "close"}}},
		{"Message", []menuItem{{"Reply", "Ctrl+R", "reply"}, {"Forward", "Ctrl+Shift+F", "forward"}, sep(),
			{"Attach File...", "", "attach"}, {"Send", "Ctrl+Enter", "send"}, {"Discard", "", "discard"}}},
	}
}

func (mailApp) openMenu(s *State) *string    { return &s.Mail.Menu }
func (mailApp) popupOpen(s *State) bool      { return s.Mail.Menu != "" }
func (mailApp) closePopups(s *State)         { s.Mail.Menu = "" }
func (mailApp) modal(s *State) bool          { return s.Mail.Dialog != nil }
func (mailApp) requestClose(d *Desktop) bool { return true }

func (mailApp) reset(d *Desktop) {
	m := &d.S.Mail
	m.Folder, m.Selected, m.Scroll, m.Compose, m.Dialog, m.Info, m.Menu = "inbox", -1, 0, nil, nil, "", ""
}

var mailPool = []Message{
	{From: "alice@example.com", Subject: "Quarterly report", Body: "Hi,\nthe quarterly report is attached to the shared drive.\nPlease review it by Friday.\nAlice"},
	{From: "bob@example.org", Subject: "Lunch on Thursday?", Body: "Are you free for lunch on Thursday at noon?\nBob"},
	{From: "carol@example.net", Subject: "Server maintenance", Body: "The build server will be down on Sunday from 2 to 4 am.\nCarol"},
	{From: "dave@example.com", Subject: "Holiday schedule", Body: "Please enter your holiday dates in the team calendar.\nDave"},
	{From: "erin@example.org", Subject: "Invoice 4471", Body: "Invoice 4471 is due at the end of the month.\nErin"},
	{From: "frank@example.net", Subject: "Welcome aboard", Body: "Welcome to the team! Your desk is on the third floor.\nFrank"},
}

func defaultMail(seed int64) MailState {
	r := rng(seed, 2)
	m := MailState{Folder: "inbox", Selected: -1}
	perm := r.Perm(len(mailPool))
	for _, i := range perm[:3] {
		m.Inbox = append(m.Inbox, mailPool[i])
	}
	return m
}

// mailLayout splits the window content below the menu bar.
type mailLayout struct {
	side, main, list, preview image.Rectangle
	visible                   int
}

func layoutMail(c image.Rectangle) mailLayout {
	var l mailLayout
	l.side = rect(c.Min.X+6, c.Min.Y+6, 160, c.Dy()-12)
	l.main = image.Rect(c.Min.X+174, c.Min.Y+6, c.Max.X-6, c.Max.Y-6)
	l.list = image.Rect(l.main.Min.X, l.main.Min.Y, l.main.Max.X, l.main.Min.Y+8*rowH+2)
	l.preview = image.Rect(l.main.Min.X, l.list.Max.Y+8, l.main.Max.X, l.main.Max.Y)
	l.visible = 8
	return l
}

// folderRows lists the messages of the open folder as (from-or-to, subject).
func (m *MailState) folderRows() [][2]string {
	var rows [][2]string
	if m.Folder == "sent" {
		for _, s := range m.Sent {
			rows = append(rows, [2]string{"To: " + s.To, s.Subject})
		}
		return rows
	}
	for _, msg := range m.Inbox {
		rows = append(rows, [2]string{msg.From, msg.Subject})
	}
	return rows
}

func (a mailApp) build(d *Desktop, win *Node, content image.Rectangle) {
	s := &d.S
	m := &s.Mail
	c := buildMenuBar(win, a, s, content)
	l := layoutMail(c)
	side := win.add(&Node{Role: RolePanel, Name: "Folders", Rect: l.side, Style: cPanel})
	button(side, "mail/compose", "Compose", rect(l.side.Min.X+10, l.side.Min.Y+10, l.side.Dx()-20, 30), btnPrimary)
	for i, f := range []struct{ id, label string }{{"inbox", fmt.Sprintf("Inbox (%d)", len(m.Inbox))}, {"sent", fmt.Sprintf("Sent (%d)", len(m.Sent))}} {
		t := side.add(&Node{ID: "mail/folder:" + f.id, Role: RolePageTab, Name: f.label, Rect: rect(l.side.Min.X+4, l.side.Min.Y+54+i*navRowH, l.side.Dx()-8, navRowH)})
		if m.Folder == f.id && m.Compose == nil {
			t.States |= StSelected
		}
	}
	if m.Compose != nil {
		a.buildCompose(d, win, l.main)
	} else {
		a.buildFolder(d, win, l)
	}
	if m.Dialog != nil {
		buildDialog(win, "mail", m.Dialog, mailDialogSpec(m.Dialog), content, &s.FS)
	}
	buildMenuPopup(win, a, s, content)
}

func (a mailApp) buildFolder(d *Desktop, win *Node, l mailLayout) {
	m := &d.S.Mail
	rows := m.folderRows()
	list := win.add(&Node{ID: "mail/list", Role: RoleList, Name: "Messages", Rect: l.list})
	top := clampScroll(m.Scroll, l.visible, len(rows))
	for i := top; i < len(rows) && i < top+l.visible; i++ {
		it := list.add(&Node{ID: "mail/msg:" + itoa(i), Role: RoleListItem, Name: rows[i][1], Value: rows[i][0],
			Rect: rect(l.list.Min.X+1, l.list.Min.Y+1+(i-top)*rowH, l.list.Dx()-14, rowH), Style: iconMail})
		if i == m.Selected {
			it.States |= StSelected
		}
	}
	if len(rows) == 0 {
		list.text(rect(l.list.Min.X+10, l.list.Min.Y+10, 300, charH), "No messages", cMuted)
	}
	scrollBar(list, "mail/scroll", image.Rect(l.list.Max.X-12, l.list.Min.Y+1, l.list.Max.X-1, l.list.Max.Y-1), top, l.visible, len(rows))
	pv := win.add(&Node{Role: RolePanel, Name: "Message", Rect: l.preview, Style: cWhite})
	y := l.preview.Min.Y + 8
	if m.Info != "" {
		pv.label(rect(l.preview.Min.X+10, y, l.preview.Dx()-20, 16), m.Info, cGreen)
		y += 24
	}
	if m.Selected < 0 || m.Selected >= len(rows) {
		return
	}
	var from, to, subject, body string
	if m.Folder == "sent" {
		s := m.Sent[m.Selected]
		from, to, subject, body = "me", s.To, s.Subject, s.Body
		if len(s.Attachments) > 0 {
			body += "\n\nAttachments: " + strings.Join(s.Attachments, ", ")
		}
	} else {
		msg := m.Inbox[m.Selected]
		from, to, subject, body = msg.From, "me", msg.Subject, msg.Body
		button(pv, "mail/reply", "Reply", rect(l.preview.Max.X-180, l.preview.Min.Y+8, 80, 26), btnNormal)
		button(pv, "mail/forward", "Forward", rect(l.preview.Max.X-92, l.preview.Min.Y+8, 80, 26), btnNormal)
	}
	pv.label(rect(l.preview.Min.X+10, y, l.preview.Dx()-200, 16), "From: "+from, cText)
	pv.label(rect(l.preview.Min.X+10, y+18, l.preview.Dx()-200, 16), "To: "+to, cText)
	pv.label(rect(l.preview.Min.X+10, y+36, l.preview.Dx()-20, 16), "Subject: "+subject, cText|styBold)
	lines := strings.Split(body, "\n")
	bodyNode := pv.add(&Node{Role: RoleTextArea, Name: "Message body", Value: body, Rect: image.Rect(l.preview.Min.X+6, y+60, l.preview.Max.X-6, l.preview.Max.Y-6), States: StMultiline})
	for i, line := range lines {
		ly := y + 64 + i*lineH
		if ly+lineH > l.preview.Max.Y-6 {
			break
		}
		bodyNode.add(&Node{Role: RoleParagraph, Name: line, Rect: rect(l.preview.Min.X+10, ly, l.preview.Dx()-20, lineH), States: stDrawOnly})
	}
}

// composeLayout places the compose form's widgets.
type composeLayout struct {
	to, cc, subject, attach, atts, body, send, discard, errLine image.Rectangle
	bodyRows                                                    int
}

func layoutCompose(r image.Rectangle) composeLayout {
	var l composeLayout
	fx := r.Min.X + 80
	fw := r.Dx() - 90
	l.to = rect(fx, r.Min.Y+6, fw, 26)
	l.cc = rect(fx, r.Min.Y+38, fw, 26)
	l.subject = rect(fx, r.Min.Y+70, fw, 26)
	l.attach = rect(r.Min.X+6, r.Min.Y+104, 110, 26)
	l.atts = rect(r.Min.X+126, r.Min.Y+109, r.Dx()-136, 16)
	l.send = rect(r.Max.X-100, r.Max.Y-34, 94, 30)
	l.discard = rect(r.Max.X-202, r.Max.Y-34, 94, 30)
	l.errLine = rect(r.Min.X+6, r.Max.Y-28, r.Dx()-220, 16)
	l.body = image.Rect(r.Min.X+6, r.Min.Y+138, r.Max.X-6, r.Max.Y-42)
	l.bodyRows = max((l.body.Dy()-8)/lineH, 1)
	return l
}

func (a mailApp) buildCompose(d *Desktop, win *Node, r image.Rectangle) {
	m := &d.S.Mail
	c := m.Compose
	l := layoutCompose(r)
	form := win.add(&Node{Role: RolePanel, Name: "New message", Rect: r, Style: cWin})
	active := m.Dialog == nil && m.Menu == ""
	for _, f := range []struct {
		id, label string
		field     *Field
		r         image.Rectangle
	}{{"to", "To", &c.To, l.to}, {"cc", "Cc", &c.Cc, l.cc}, {"subject", "Subject", &c.Subject, l.subject}} {
		form.label(rect(r.Min.X+8, f.r.Min.Y+6, 70, 16), f.label+":", cText)
		textField(form, "mail/"+f.id, f.label, f.field, f.r, active && c.Focus == f.id)
	}
	button(form, "mail/attach", "Attach File...", l.attach, btnNormal)
	atts := "No attachments"
	if len(c.Attachments) > 0 {
		names := make([]string, len(c.Attachments))
		for i, p := range c.Attachments {
			names[i] = path.Base(p)
		}
		atts = "Attached: " + strings.Join(names, ", ")
	}
	form.label(l.atts, atts, cMuted)
	b := &c.Body
	ta := form.add(&Node{ID: "mail/body", Role: RoleTextArea, Name: "Body", Value: b.Text(), Rect: l.body, States: StEditable | StMultiline})
	if active && c.Focus == "body" {
		ta.States |= StFocused
	}
	top := min(max(b.Top, 0), max(len(b.Lines)-1, 0))
	o := image.Pt(l.body.Min.X+6, l.body.Min.Y+4)
	for i := top; i < len(b.Lines) && i < top+l.bodyRows; i++ {
		y := o.Y + (i-top)*lineH
		if b.All {
			ta.add(&Node{Role: RolePanel, Rect: rect(o.X, y, max(textWidth(b.Lines[i]), charW), lineH), Style: cAccentLight, States: stDrawOnly})
		}
		if b.Sel > 0 && i == b.Line {
			ta.add(&Node{Role: RolePanel, Rect: rect(o.X+b.Col*charW, y, b.Sel*charW, lineH), Style: cAccentLight, States: stDrawOnly})
		}
		ta.add(&Node{Role: RoleParagraph, Name: b.Lines[i], Rect: rect(o.X, y, l.body.Dx()-12, lineH), States: stDrawOnly})
	}
	if ta.States&StFocused != 0 && !b.All && b.Line >= top && b.Line < top+l.bodyRows {
		ta.add(&Node{Role: RoleCaret, Rect: rect(o.X+b.Col*charW, o.Y+(b.Line-top)*lineH, 1, lineH), States: stDrawOnly})
	}
	button(form, "mail/discard", "Discard", l.discard, btnNormal)
	button(form, "mail/send", "Send", l.send, btnPrimary)
	if c.Error != "" {
		form.label(l.errLine, c.Error, cRed)
	}
}

func mailDialogSpec(dl *Dialog) dialogSpec {
	if dl.Kind == "attach" {
		return dialogSpec{title: "Attach File", fields: []string{"File"}, files: true, buttons: []dlgButton{{"cancel", "Cancel", false}, {"ok", "Attach", true}}}
	}
	return dialogSpec{title: "Mail", buttons: []dlgButton{{"cancel", "OK", true}}}
}

// checkAddresses validates a comma-separated address list ("" is allowed
// when optional).
func checkAddresses(list string, required bool) (string, string) {
	var out []string
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		at := strings.IndexByte(a, '@')
		if at <= 0 || at == len(a)-1 || strings.ContainsAny(a, " \t<>") || strings.Count(a, "@") != 1 {
			return "", "Invalid address: " + a
		}
		out = append(out, a)
	}
	if required && len(out) == 0 {
		return "", "Please enter a recipient"
	}
	return strings.Join(out, ", "), ""
}

func (a mailApp) command(d *Desktop, cmd string) {
	m := &d.S.Mail
	switch cmd {
	case "compose":
		if m.Compose == nil {
			m.Compose = &Compose{Body: newBuffer(""), Focus: "to"}
		}
		m.Info = ""
	case "reply", "forward":
		if m.Folder != "inbox" || m.Selected < 0 || m.Selected >= len(m.Inbox) {
			return
		}
		msg := m.Inbox[m.Selected]
		c := &Compose{Focus: "to"}
		if cmd == "reply" {
			c.To.SetText(msg.From)
			c.Subject.SetText("Re: " + msg.Subject)
			quoted := make([]string, 0)
			for _, line := range strings.Split(msg.Body, "\n") {
				quoted = append(quoted, "> "+line)
			}
			c.Body = newBuffer("\n\n" + msg.From + " wrote:\n" + strings.Join(quoted, "\n"))
			c.Focus = "body"
		} else {
			c.Subject.SetText("Fwd: " + msg.Subject)
			c.Body = newBuffer("\n\n---------- Forwarded message ----------\nFrom: " + msg.From + "\nSubject: " + msg.Subject + "\n\n" + msg.Body)
		}
		m.Compose, m.Info = c, ""
	case "attach":
		if m.Compose != nil {
			m.Dialog = &Dialog{Kind: "attach"}
			m.Dialog.Field.SetText("~/Documents/")
		}
	case "send":
		a.send(d)
	case "discard":
		m.Compose = nil
	case "close":
		d.closeWindow("mail")
	}
}

func (a mailApp) send(d *Desktop) {
	m := &d.S.Mail
	c := m.Compose
	if c == nil {
		return
	}
	to, msg := checkAddresses(c.To.Text, true)
	if msg != "" {
		c.Error = msg
		return
	}
	cc, msg := checkAddresses(c.Cc.Text, false)
	if msg != "" {
		c.Error = msg
		return
	}
	m.Sent = append(m.Sent, judge.Mail{To: to, Cc: cc, Subject: strings.TrimSpace(c.Subject.Text), Body: c.Body.Text(),
		Attachments: append([]string(nil), c.Attachments...)})
	m.Compose, m.Folder, m.Selected, m.Info = nil, "sent", len(m.Sent)-1, "Message sent"
}

func (a mailApp) dialogDone(d *Desktop, cmd string) {
	m := &d.S.Mail
	dl := m.Dialog
	if cmd == "cancel" || dl.Kind != "attach" {
		m.Dialog = nil
		return
	}
	if cmd != "ok" {
		return
	}
	p, err := vfs.Clean(dl.Field.Text)
	if err != nil {
		dl.Error = "Invalid path"
		return
	}
	if d.S.FS.IsDir(p) {
		dl.Field.SetText(vfs.Short(p) + "/")
		dl.Pick, dl.Scroll = "", 0
		return
	}
	if _, ok := d.S.FS.Stat(p); !ok {
		dl.Error = "No such file: " + vfs.Short(p)
		return
	}
	if c := m.Compose; c != nil && !slices.Contains(c.Attachments, p) && len(c.Attachments) < 10 {
		c.Attachments = append(c.Attachments, p)
	}
	m.Dialog = nil
}

// composeField returns the focused single-line field of the form, or nil.
func (c *Compose) field(name string) *Field {
	switch name {
	case "to":
		return &c.To
	case "cc":
		return &c.Cc
	case "subject":
		return &c.Subject
	}
	return nil
}

func (a mailApp) click(d *Desktop, local string, ev ptrEvent) {
	m := &d.S.Mail
	if m.Dialog != nil {
		if cmd := dialogClick(d, m.Dialog, mailDialogSpec(m.Dialog), local, ev); cmd != "" {
			a.dialogDone(d, cmd)
		}
		return
	}
	if ev.kind == "right_click" || ev.kind == "middle_click" {
		return
	}
	single := ev.kind == "click"
	switch {
	case local == "compose" && single:
		a.command(d, "compose")
	case strings.HasPrefix(local, "folder:"):
		m.Folder, m.Selected, m.Scroll, m.Compose, m.Info = local[len("folder:"):], -1, 0, nil, ""
	case strings.HasPrefix(local, "msg:"):
		var i int
		if _, err := fmt.Sscanf(local, "msg:%d", &i); err == nil && i >= 0 && i < len(m.folderRows()) {
			m.Selected, m.Info = i, ""
		}
	case local == "scroll":
		l := layoutMail(d.contentRect("mail"))
		n := len(m.folderRows())
		m.Scroll = scrollBarClick(ev.node, ev.p, clampScroll(m.Scroll, l.visible, n), l.visible, n)
	case (local == "reply" || local == "forward") && single:
		a.command(d, local)
	case m.Compose == nil:
	case local == "to" || local == "cc" || local == "subject":
		c := m.Compose
		was := c.Focus == local
		c.Focus = local
		clickField(c.field(local), ev.node, ev, was)
	case local == "body":
		c := m.Compose
		c.Focus = "body"
		l := layoutCompose(layoutMail(d.contentRect("mail")).main)
		b := &c.Body
		b.clamp()
		b.All, b.Sel = false, 0
		b.Line = min(max(b.Top+(ev.p.Y-l.body.Min.Y-4)/lineH, 0), len(b.Lines)-1)
		b.Col = max((ev.p.X-l.body.Min.X-6+charW/2)/charW, 0)
		b.clamp()
		if ev.kind == "triple_click" {
			b.All = true
		}
	case local == "attach" && single:
		a.command(d, "attach")
	case local == "send" && single:
		a.command(d, "send")
	case local == "discard" && single:
		a.command(d, "discard")
	}
}

func (a mailApp) key(d *Desktop, k Key) {
	m := &d.S.Mail
	if m.Dialog != nil {
		if cmd := dialogKey(m.Dialog, mailDialogSpec(m.Dialog), k); cmd != "" {
			a.dialogDone(d, cmd)
		}
		return
	}
	combo := k.Combo()
	cmds := map[string]string{"ctrl+n": "compose", "ctrl+r": "reply", "ctrl+shift+f": "forward", "ctrl+enter": "send", "ctrl+w": "close"}
	if cmd, ok := cmds[combo]; ok {
		a.command(d, cmd)
		return
	}
	c := m.Compose
	if c == nil {
		rows := m.folderRows()
		switch combo {
		case "up":
			m.Selected = max(m.Selected-1, 0)
		case "down":
			m.Selected = min(m.Selected+1, len(rows)-1)
		}
		return
	}
	order := []string{"to", "cc", "subject", "body"}
	i := slices.Index(order, c.Focus)
	switch combo {
	case "tab":
		c.Focus = order[(i+1)%len(order)]
		return
	case "shift+tab":
		c.Focus = order[(i+len(order)-1)%len(order)]
		return
	}
	if f := c.field(c.Focus); f != nil {
		if combo == "enter" {
			c.Focus = order[i+1]
			return
		}
		if !f.key(k) {
			if ch, ok := k.char(); ok {
				f.insert(ch)
			}
		}
		c.Error = ""
		return
	}
	if c.Focus == "body" {
		l := layoutCompose(layoutMail(d.contentRect("mail")).main)
		handled, _ := c.Body.key(k, l.bodyRows)
		if !handled {
			if ch, ok := k.char(); ok {
				c.Body.insert(ch)
			}
		}
		c.Body.scrollTo(l.bodyRows)
	}
}

func (a mailApp) typeText(d *Desktop, text string) {
	m := &d.S.Mail
	if m.Dialog != nil {
		dialogType(m.Dialog, mailDialogSpec(m.Dialog), text)
		return
	}
	c := m.Compose
	if c == nil {
		return
	}
	c.Error = ""
	if f := c.field(c.Focus); f != nil {
		f.insert(text)
		return
	}
	if c.Focus == "body" {
		c.Body.insert(text)
		l := layoutCompose(layoutMail(d.contentRect("mail")).main)
		c.Body.scrollTo(l.bodyRows)
	}
}

func (a mailApp) scroll(d *Desktop, local string, dy int) {
	m := &d.S.Mail
	if m.Dialog != nil {
		if strings.HasPrefix(local, "dlg:") {
			dialogScroll(d, m.Dialog, dy)
		}
		return
	}
	switch {
	case local == "body" && m.Compose != nil:
		b := &m.Compose.Body
		b.Top = min(max(b.Top+dy*3, 0), max(len(b.Lines)-1, 0))
	case local == "list" || local == "scroll" || strings.HasPrefix(local, "msg:"):
		l := layoutMail(d.contentRect("mail"))
		n := len(m.folderRows())
		m.Scroll = clampScroll(clampScroll(m.Scroll, l.visible, n)+dy, l.visible, n)
	}
}

func (mailApp) drag(d *Desktop, from, to string, ev ptrEvent) {}
