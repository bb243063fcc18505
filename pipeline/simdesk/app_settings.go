package simdesk

import (
	"image"
	"strconv"
	"strings"
)

// settingsApp is the settings panel: pages of toggles, dropdowns, text
// fields and sliders.
type settingsApp struct{}

const (
	settingRowH = 44
	navRowH     = 30
	controlW    = 240
)

func (settingsApp) id() string                   { return "settings" }
func (settingsApp) name() string                 { return "Settings" }
func (settingsApp) menus() []menuDef             { return nil }
func (settingsApp) openMenu(s *State) *string    { return new(string) }
func (settingsApp) popupOpen(s *State) bool      { return s.Settings.Open != "" }
func (settingsApp) closePopups(s *State)         { s.Settings.Open = "" }
func (settingsApp) modal(s *State) bool          { return false }
func (settingsApp) requestClose(d *Desktop) bool { return true }

// title is GNOME Settings' (gnome-control-center): "Settings".
func (settingsApp) title(s *State) string { return "Settings" }

func (settingsApp) reset(d *Desktop) {
	st := &d.S.Settings
	st.Page, st.Scroll, st.Open, st.EditKey, st.Edit, st.Message = "general", 0, "", "", nil, ""
}

// settingsLayout splits the window content.
type settingsLayout struct {
	nav, area, rows image.Rectangle
	visible         int
}

func layoutSettings(c image.Rectangle) settingsLayout {
	var l settingsLayout
	l.nav = rect(c.Min.X+6, c.Min.Y+6, 170, c.Dy()-12)
	l.area = image.Rect(c.Min.X+184, c.Min.Y+6, c.Max.X-6, c.Max.Y-6)
	l.rows = image.Rect(l.area.Min.X, l.area.Min.Y+44, l.area.Max.X, l.area.Max.Y-26)
	l.visible = max(l.rows.Dy()/settingRowH, 1)
	return l
}

// controlRect is where a setting's control sits in its row.
func controlRect(def *SettingDef, row image.Rectangle) image.Rectangle {
	x := row.Max.X - 24 - controlW
	switch def.Kind {
	case KindToggle:
		return rect(row.Max.X-24-44, row.Min.Y+11, 44, 22)
	case KindSlider:
		return rect(x, row.Min.Y+12, controlW-44, 20)
	}
	return rect(x, row.Min.Y+9, controlW, 26)
}

func (a settingsApp) build(d *Desktop, win *Node, content image.Rectangle) {
	s := &d.S
	st := &s.Settings
	l := layoutSettings(content)
	nav := win.add(&Node{Role: RoleList, Name: "Pages", Rect: l.nav})
	for i, p := range Pages {
		t := nav.add(&Node{ID: "settings/page:" + p.ID, Role: RolePageTab, Name: p.Title, Rect: rect(l.nav.Min.X+1, l.nav.Min.Y+1+i*navRowH, l.nav.Dx()-2, navRowH)})
		if p.ID == st.Page {
			t.States |= StSelected
		}
	}
	page := settingsPage(st.Page)
	area := win.add(&Node{ID: "settings/area", Role: RolePanel, Name: page.Title, Rect: l.area, Style: cWin})
	area.label(rect(l.area.Min.X+10, l.area.Min.Y+10, 300, 20), page.Title, cText|styBold)
	top := clampScroll(st.Scroll, l.visible, len(page.Settings))
	var openNode *Node
	var openDef *SettingDef
	for i := top; i < len(page.Settings) && i < top+l.visible; i++ {
		def := page.Settings[i]
		row := rect(l.rows.Min.X, l.rows.Min.Y+(i-top)*settingRowH, l.rows.Dx()-14, settingRowH)
		area.add(&Node{Role: RoleSeparator, Rect: rect(row.Min.X+6, row.Max.Y-1, row.Dx()-12, 1), States: stDrawOnly})
		area.label(rect(row.Min.X+10, row.Min.Y+14, row.Dx()-controlW-40, 16), def.Label, cText)
		raw, _ := s.settingRaw(def.Key)
		cr := controlRect(def, row)
		id := "settings/set:" + def.Key
		switch def.Kind {
		case KindToggle:
			n := area.add(&Node{ID: id, Role: RoleSwitch, Name: def.Label, Rect: cr})
			if raw == "true" {
				n.States |= StChecked
			}
		case KindChoice:
			n := area.add(&Node{ID: id, Role: RoleCombo, Name: def.Label, Value: raw, Rect: cr})
			if st.Open == def.Key {
				n.States |= StExpanded
				openNode, openDef = n, def
			}
		case KindText:
			f := Field{Text: raw}
			focused := st.EditKey == def.Key && st.Edit != nil
			if focused {
				f = *st.Edit
			}
			textField(area, id, def.Label, &f, cr, focused)
		case KindSlider:
			n := area.add(&Node{ID: id, Role: RoleSlider, Name: def.Label, Value: raw, Rect: cr})
			if st.EditKey == def.Key {
				n.States |= StFocused
			}
			area.text(rect(cr.Max.X+10, cr.Min.Y+3, 36, charH), raw, cText|styRight)
		}
	}
	scrollBar(area, "settings/scroll", image.Rect(l.rows.Max.X-12, l.rows.Min.Y, l.rows.Max.X-1, l.rows.Min.Y+l.visible*settingRowH), top, l.visible, len(page.Settings))
	if st.Message != "" {
		area.label(rect(l.area.Min.X+10, l.area.Max.Y-22, l.area.Dx()-20, 16), st.Message, cRed)
	}
	if openNode != nil {
		r := openNode.Rect
		h := len(openDef.Options)*rowH + 4
		y := r.Max.Y
		if y+h > content.Max.Y {
			y = r.Min.Y - h // open upwards near the window's bottom
		}
		p := win.add(&Node{Role: RolePopup, Name: openDef.Label + " options", Rect: rect(r.Min.X, y, r.Dx(), h)})
		raw, _ := s.settingRaw(openDef.Key)
		for i, o := range openDef.Options {
			n := p.add(&Node{ID: "settings/pop:opt:" + openDef.Key + ":" + strconv.Itoa(i), Role: RoleOption, Name: o, Rect: rect(r.Min.X+2, y+2+i*rowH, r.Dx()-4, rowH)})
			if o == raw {
				n.States |= StSelected
			}
		}
	}
}

// commitEdit stores the text setting being edited; it reports false (and
// keeps editing) when the value is refused.
func (a settingsApp) commitEdit(s *State) bool {
	st := &s.Settings
	if st.Edit == nil {
		st.EditKey = ""
		return true
	}
	if msg := s.setSetting(st.EditKey, st.Edit.Text); msg != "" {
		st.Message = msg
		return false
	}
	st.Edit, st.EditKey, st.Message = nil, "", ""
	return true
}

func (a settingsApp) command(d *Desktop, cmd string) {
	s := &d.S
	if !strings.HasPrefix(cmd, "opt:") {
		return
	}
	rest := cmd[len("opt:"):]
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return
	}
	def := settingByKey(rest[:i])
	n, err := strconv.Atoi(rest[i+1:])
	if def == nil || err != nil || n < 0 || n >= len(def.Options) {
		return
	}
	s.setSetting(def.Key, def.Options[n])
}

// sliderValue maps a pixel to a slider value.
func sliderValue(r image.Rectangle, x int) int {
	v := (x - r.Min.X) * 100
	return min(max((v+r.Dx()/2)/max(r.Dx(), 1), 0), 100)
}

func (a settingsApp) click(d *Desktop, local string, ev ptrEvent) {
	s := &d.S
	st := &s.Settings
	if ev.kind == "right_click" || ev.kind == "middle_click" {
		return
	}
	key := strings.TrimPrefix(local, "set:")
	if local != "set:"+st.EditKey || st.Edit == nil {
		if !a.commitEdit(s) {
			return // the refused value stays in its field
		}
	}
	switch {
	case strings.HasPrefix(local, "page:"):
		if p := settingsPage(local[len("page:"):]); p != nil && p.ID != st.Page {
			st.Page, st.Scroll, st.Message = p.ID, 0, ""
		}
	case strings.HasPrefix(local, "set:"):
		def := settingByKey(key)
		if def == nil {
			return
		}
		st.Message = ""
		switch def.Kind {
		case KindToggle:
			raw, _ := s.settingRaw(key)
			s.setSetting(key, strconv.FormatBool(raw != "true"))
		case KindChoice:
			st.Open = key
		case KindText:
			if st.EditKey != key || st.Edit == nil {
				raw, _ := s.settingRaw(key)
				st.EditKey, st.Edit = key, &Field{}
				st.Edit.SetText(raw)
				clickField(st.Edit, ev.node, ev, false)
				return
			}
			clickField(st.Edit, ev.node, ev, true)
		case KindSlider:
			st.EditKey = key
			s.setSetting(key, strconv.Itoa(sliderValue(ev.node.Rect, ev.p.X)))
		}
	case local == "scroll":
		page := settingsPage(st.Page)
		l := layoutSettings(d.contentRect("settings"))
		st.Scroll = scrollBarClick(ev.node, ev.p, clampScroll(st.Scroll, l.visible, len(page.Settings)), l.visible, len(page.Settings))
	}
}

func (a settingsApp) key(d *Desktop, k Key) {
	s := &d.S
	st := &s.Settings
	combo := k.Combo()
	if combo == "ctrl+w" {
		d.closeWindow("settings")
		return
	}
	if st.Edit != nil {
		switch combo {
		case "enter", "tab":
			a.commitEdit(s)
		case "escape":
			st.Edit, st.EditKey, st.Message = nil, "", ""
		default:
			if !st.Edit.key(k) {
				if ch, ok := k.char(); ok {
					st.Edit.insert(ch)
				}
			}
		}
		return
	}
	def := settingByKey(st.EditKey)
	if def == nil || def.Kind != KindSlider {
		return
	}
	raw, _ := s.settingRaw(def.Key)
	v, _ := strconv.Atoi(raw)
	switch combo {
	case "left", "down":
		v--
	case "right", "up":
		v++
	case "pagedown":
		v -= 10
	case "pageup":
		v += 10
	case "home":
		v = 0
	case "end":
		v = 100
	case "escape":
		st.EditKey = ""
		return
	default:
		return
	}
	s.setSetting(def.Key, strconv.Itoa(min(max(v, 0), 100)))
}

func (a settingsApp) typeText(d *Desktop, text string) {
	if st := &d.S.Settings; st.Edit != nil {
		st.Edit.insert(text)
	}
}

func (a settingsApp) scroll(d *Desktop, local string, dy int) {
	st := &d.S.Settings
	if strings.HasPrefix(local, "page:") {
		return
	}
	page := settingsPage(st.Page)
	l := layoutSettings(d.contentRect("settings"))
	st.Scroll = clampScroll(clampScroll(st.Scroll, l.visible, len(page.Settings))+dy, l.visible, len(page.Settings))
}

func (a settingsApp) drag(d *Desktop, from, to string, ev ptrEvent) {
	s := &d.S
	key := strings.TrimPrefix(from, "set:")
	if def := settingByKey(key); def != nil && def.Kind == KindSlider && ev.node != nil {
		if !a.commitEdit(s) {
			return
		}
		s.Settings.EditKey = key
		s.setSetting(key, strconv.Itoa(sliderValue(ev.node.Rect, ev.to.X)))
	}
}
