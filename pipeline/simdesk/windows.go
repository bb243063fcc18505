package simdesk

import "strings"

// windowClass is each app window's WM_CLASS as wmctrl -lx prints it
// ("instance.Class"), matching the programs of OSWorld's Ubuntu image that
// the apps stand in for: OSWorld's close_window steps name Thunderbird by
// class ("Mail.thunderbird").
var windowClass = map[string]string{
	"files":    "org.gnome.Nautilus.Org.gnome.Nautilus",
	"editor":   "gnome-text-editor.Gnome-text-editor",
	"sheet":    "libreoffice.libreoffice-calc",
	"settings": "gnome-control-center.Gnome-control-center",
	"mail":     "Mail.thunderbird",
}

// WindowInfo is an open window as a window manager lists it.
type WindowInfo struct {
	App   string // the simulator's app id
	Title string
	Class string // WM_CLASS, "instance.Class"
}

// WindowList lists the open windows, bottom to top (the last has the focus).
func (s *State) WindowList() []WindowInfo {
	out := make([]WindowInfo, len(s.Windows))
	for i, w := range s.Windows {
		out[i] = WindowInfo{App: w.App, Title: appByID(w.App).title(s), Class: windowClass[w.App]}
	}
	return out
}

// FindWindow returns the app of the window that wmctrl -a (or -c) would
// pick for name, as OSWorld's activate_window and close_window run it:
// the name is a case-insensitive part of the title, or with strict (-F)
// the whole title, case-sensitive; with byClass (-x) the same against
// the WM_CLASS. The topmost match wins; "" when none matches.
func (s *State) FindWindow(name string, strict, byClass bool) string {
	ws := s.WindowList()
	for i := len(ws) - 1; i >= 0; i-- {
		cand := ws[i].Title
		if byClass {
			cand = ws[i].Class
		}
		if (strict && cand == name) || (!strict && strings.Contains(strings.ToLower(cand), strings.ToLower(name))) {
			return ws[i].App
		}
	}
	return ""
}

// ActivateWindow raises the window FindWindow picks; false when none
// matches.
func (d *Desktop) ActivateWindow(name string, strict, byClass bool) bool {
	id := d.S.FindWindow(name, strict, byClass)
	if id == "" {
		return false
	}
	d.raise(id)
	d.invalidate()
	return true
}

// CloseWindowNamed closes the window FindWindow picks, dropping unsaved
// changes as wmctrl -c does to a program that does not ask; false when
// none matches.
func (d *Desktop) CloseWindowNamed(name string, strict, byClass bool) bool {
	id := d.S.FindWindow(name, strict, byClass)
	if id == "" {
		return false
	}
	d.forceClose(id)
	appByID(id).reset(d)
	d.invalidate()
	return true
}
