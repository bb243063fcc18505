package verify

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// reading is what one screen shows about one check.
type reading struct {
	found bool   // the evidence is on screen
	ok    bool   // and the condition holds
	weak  bool   // on screen but not persisted (an unsaved buffer, a field being edited, a draft)
	note  string // what was seen
	sent  int    // the Sent folder's count, when a mail check saw it (-1 when not)
}

func seen(ok bool, note string) reading { return reading{found: true, ok: ok, note: note, sent: -1} }

// docView is a visible document window: editor or sheet.
type docView struct {
	app   string
	path  string // absolute; "" when untitled
	dirty bool
}

// document reads an app's document window: the path and saved state from
// its status bar (or title), when visible.
func document(s *Screen, app string) (docView, bool) {
	if s == nil || s.Window(app) == nil {
		return docView{}, false
	}
	v := docView{app: app}
	status, ok := s.StatusBar(app)
	if !ok {
		return v, false
	}
	parts := strings.Split(status, "   ")
	where := strings.TrimSpace(parts[len(parts)-1])
	switch app {
	case "editor":
		v.dirty = slices.Contains(parts, "Modified")
	case "sheet":
		if w, ok := strings.CutSuffix(where, " (modified)"); ok {
			where, v.dirty = w, true
		}
	}
	if where != "Untitled" {
		v.path = absPath(where)
	}
	return v, true
}

// appFor is the app that opens a path: Sheet for .csv, else the editor.
func appFor(p string) string {
	if strings.HasSuffix(strings.ToLower(p), ".csv") {
		return "sheet"
	}
	return "editor"
}

// listing is a visible file-manager folder listing.
type listing struct {
	dir      string
	names    []string
	complete bool // every entry of the folder is visible
}

func filesListing(s *Screen) (listing, bool) {
	if s == nil {
		return listing{}, false
	}
	list := s.Find("files/list")
	if list == nil {
		return listing{}, false
	}
	dir, ok := strings.CutPrefix(list.Name, "Files in ")
	if !ok {
		return listing{}, false
	}
	l := listing{dir: absPath(dir)}
	for _, n := range s.Prefixed("files/item:") {
		l.names = append(l.names, strings.TrimPrefix(n.ID, "files/item:"))
	}
	if status, ok := s.StatusBar("files"); ok {
		count, _, _ := strings.Cut(status, " items")
		if n, err := strconv.Atoi(count); err == nil && n == len(l.names) {
			l.complete = true
		}
	}
	return l, true
}

// read interprets one screen for one check.
func read(s *Screen, c *Check) reading {
	if s == nil || c == nil {
		return reading{}
	}
	switch c.Kind {
	case KindExists, KindAbsent:
		r := readExists(s, c.Path)
		if c.Kind == KindAbsent && r.found {
			r.ok = !r.ok
		}
		return r
	case KindNoExtIn:
		if l, ok := filesListing(s); ok && l.dir == c.Path && l.complete {
			for _, n := range l.names {
				if strings.HasSuffix(strings.ToLower(n), strings.ToLower(c.Want)) {
					return seen(false, vfs.Short(c.Path)+" still lists "+n)
				}
			}
			return seen(true, vfs.Short(c.Path)+" lists no "+c.Want+" file")
		}
	case KindContent, KindIncludes, KindExcludes:
		return readText(s, c)
	case KindSaved:
		return readSaved(s, c.Path)
	case KindSetting:
		return readSetting(s, c)
	case KindMail:
		return readMail(s, c)
	case KindCell, KindLookup, KindSorted, KindTable:
		return readSheet(s, c)
	}
	return reading{}
}

func readExists(s *Screen, p string) reading {
	if l, ok := filesListing(s); ok && l.dir == path.Dir(p) {
		if slices.Contains(l.names, path.Base(p)) {
			return seen(true, "listed in "+vfs.Short(l.dir))
		}
		if l.complete {
			return seen(false, "not listed in "+vfs.Short(l.dir))
		}
	}
	for _, app := range []string{"editor", "sheet"} {
		if v, ok := document(s, app); ok && v.path == p && !v.dirty {
			return seen(true, "open and saved in the "+app)
		}
	}
	return reading{}
}

// docText is the visible text of the document at p ("" = whichever is
// open), and whether it is unsaved.
func docText(s *Screen, p string) (text string, dirty, ok bool) {
	app := appFor(p)
	if p == "" {
		app = "editor"
	}
	v, ok := document(s, app)
	if !ok || (p != "" && v.path != p) || app != "editor" {
		return "", false, false
	}
	n := s.Find("editor/text")
	if n == nil {
		return "", false, false
	}
	return n.Value, v.dirty, true
}

func holds(kind, text, want string) bool {
	switch kind {
	case KindContent:
		return strings.TrimSpace(text) == strings.TrimSpace(want)
	case KindIncludes:
		return strings.Contains(text, want)
	case KindExcludes:
		return !strings.Contains(text, want)
	}
	return false
}

func readText(s *Screen, c *Check) reading {
	text, dirty, ok := docText(s, c.Path)
	if !ok {
		return reading{}
	}
	r := seen(holds(c.Kind, text, c.Want), "the editor shows "+short(c.Path))
	if dirty {
		r.weak, r.note = true, r.note+" with unsaved changes"
	}
	return r
}

func readSaved(s *Screen, p string) reading {
	app := appFor(p)
	if p == "" {
		app = "editor"
	}
	if s.Window(app) == nil {
		if dock := s.Find("dock/" + app); dock != nil && !dock.Has("checked") {
			return seen(true, "no "+app+" window is open, so nothing is left unsaved")
		}
		return reading{}
	}
	v, ok := document(s, app)
	if !ok {
		if title, tok := s.Title(app); tok {
			return seen(!strings.HasPrefix(title, "*"), "title "+strconv.Quote(title))
		}
		return reading{}
	}
	if p != "" && v.path != p {
		if v.dirty {
			return reading{}
		}
		return seen(true, "the open document is "+short(v.path)+", saved")
	}
	if v.dirty {
		return seen(false, short(v.path)+" has unsaved changes")
	}
	return seen(true, short(v.path)+" is saved")
}

func readSetting(s *Screen, c *Check) reading {
	n := s.Find("settings/set:" + c.Key)
	if n == nil {
		return reading{}
	}
	def := simdesk.SettingByKey(c.Key)
	if def == nil {
		return reading{}
	}
	var got string
	switch n.Role {
	case "switch":
		got = strconv.FormatBool(n.Has("checked"))
	default:
		got = n.Value
	}
	ok := got == c.Want
	if def.Kind == simdesk.KindSlider {
		a, err1 := strconv.ParseFloat(got, 64)
		b, err2 := strconv.ParseFloat(c.Want, 64)
		ok = err1 == nil && err2 == nil && math.Abs(a-b) <= 1
	}
	r := seen(ok, def.Label+" shows "+strconv.Quote(got))
	if n.Has("focused") && n.Role == "text_field" {
		r.weak, r.note = true, r.note+" while being edited"
	}
	return r
}

// sentView is the message the Sent folder shows.
type sentView struct {
	count            int
	to, subject, cc  string
	body             string
	attachments      []string
	selectedIsNewest bool
}

func sentCount(s *Screen) (int, bool) {
	n := s.Find("mail/folder:sent")
	if n == nil {
		return 0, false
	}
	var k int
	if _, err := fmt.Sscanf(n.Name, "Sent (%d)", &k); err != nil {
		return 0, false
	}
	return k, true
}

func readSent(s *Screen) (sentView, bool) {
	var v sentView
	var ok bool
	if v.count, ok = sentCount(s); !ok {
		return v, false
	}
	f := s.Find("mail/folder:sent")
	if f == nil || !f.Has("selected") {
		return v, v.count == 0
	}
	sel := -1
	for _, m := range s.Prefixed("mail/msg:") {
		if m.Has("selected") {
			sel, _ = strconv.Atoi(strings.TrimPrefix(m.ID, "mail/msg:"))
		}
	}
	if sel < 0 {
		return v, v.count == 0
	}
	v.selectedIsNewest = sel == v.count-1
	for _, l := range s.Labels("mail") {
		switch {
		case strings.HasPrefix(l, "To: "):
			v.to = strings.TrimPrefix(l, "To: ")
		case strings.HasPrefix(l, "Subject: "):
			v.subject = strings.TrimPrefix(l, "Subject: ")
		}
	}
	for _, n := range s.inWindow("mail", "text_area") {
		if n.Name == "Message body" {
			body, atts, _ := strings.Cut(n.Value, "\n\nAttachments: ")
			v.body = body
			if atts != "" {
				v.attachments = strings.Split(atts, ", ")
			}
		}
	}
	return v, true
}

func readMail(s *Screen, c *Check) reading {
	if s.Window("mail") == nil {
		return reading{}
	}
	v, ok := readSent(s)
	if !ok {
		return reading{}
	}
	if v.count == 0 {
		r := seen(false, "the Sent folder is empty")
		r.sent = 0
		return r
	}
	if !v.selectedIsNewest {
		return reading{sent: v.count}
	}
	var good bool
	switch c.Field {
	case "to":
		good = strings.EqualFold(strings.TrimSpace(v.to), c.Want)
	case "cc":
		return reading{sent: v.count} // the preview does not show Cc
	case "subject":
		good = strings.TrimSpace(v.subject) == c.Want
	case "body":
		good = strings.Contains(v.body, strings.TrimSpace(c.Want))
	case "attachment":
		good = slices.ContainsFunc(v.attachments, func(a string) bool { return path.Base(a) == c.Want })
	default:
		return reading{}
	}
	return seen(good, "the newest sent message's "+c.Field+" is shown")
}

// sheetCells reads the visible cells of the Sheet window by name ("B6").
func sheetCells(s *Screen) map[string]string {
	out := map[string]string{}
	for _, n := range s.Prefixed("sheet/cell:") {
		out[strings.TrimPrefix(n.ID, "sheet/cell:")] = n.Value
	}
	return out
}

func sameValue(got, want string) bool {
	got, want = strings.TrimSpace(got), strings.TrimSpace(want)
	if strings.EqualFold(got, want) {
		return true
	}
	a, err1 := strconv.ParseFloat(got, 64)
	b, err2 := strconv.ParseFloat(want, 64)
	return err1 == nil && err2 == nil && math.Abs(a-b) < 1e-6
}

func colName(i int) string { return string(rune('A' + i)) }

func readSheet(s *Screen, c *Check) reading {
	v, ok := document(s, "sheet")
	if !ok || v.path != c.Path {
		return reading{}
	}
	cells := sheetCells(s)
	if len(cells) == 0 {
		return reading{}
	}
	var r reading
	switch c.Kind {
	case KindCell:
		if c.Raw {
			box := s.Find("sheet/namebox")
			f := s.Find("sheet/formula")
			if box == nil || f == nil || !strings.EqualFold(box.Value, c.Cell) {
				return reading{}
			}
			got := strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(f.Value)), " ", "")
			want := strings.ToUpper(c.Want)
			good := got == want || (strings.HasSuffix(want, "(") && strings.HasPrefix(got, want))
			r = seen(good, "cell "+c.Cell+" holds "+strconv.Quote(f.Value))
		} else {
			got, ok := cells[c.Cell]
			if !ok {
				return reading{}
			}
			r = seen(sameValue(got, c.Want), "cell "+c.Cell+" shows "+strconv.Quote(got))
		}
	case KindLookup:
		col := -1
		for i := 0; i < 26; i++ {
			if h, ok := cells[colName(i)+"1"]; ok && strings.EqualFold(h, c.Column) {
				col = i
			}
		}
		if col < 0 {
			return reading{}
		}
		for row := 2; row < 200; row++ {
			label, ok := cells["A"+strconv.Itoa(row)]
			if !ok {
				return reading{}
			}
			if strings.EqualFold(label, c.Row) {
				got := cells[colName(col)+strconv.Itoa(row)]
				r = seen(sameValue(got, c.Want), c.Row+" "+c.Column+" shows "+strconv.Quote(got))
				break
			}
			if label == "" {
				return seen(false, "no row labelled "+c.Row)
			}
		}
	case KindSorted:
		col := -1
		for i := 0; i < 26; i++ {
			if h, ok := cells[colName(i)+"1"]; ok && strings.EqualFold(h, c.Column) {
				col = i
			}
		}
		if col < 0 {
			return reading{}
		}
		var vals []string
		for row := 2; ; row++ {
			a, ok := cells["A"+strconv.Itoa(row)]
			if !ok {
				return reading{} // rows run past the visible grid
			}
			if a == "" {
				break
			}
			vals = append(vals, cells[colName(col)+strconv.Itoa(row)])
		}
		r = seen(sortedValues(vals, c.Want == "desc"), c.Column+" column reads "+strings.Join(vals, ", "))
	case KindTable:
		var rows [][]string
		if err := json.Unmarshal([]byte(c.Want), &rows); err != nil {
			return reading{}
		}
		good := true
		for i, row := range rows {
			for j, want := range row {
				got, ok := cells[colName(j)+strconv.Itoa(i+1)]
				if !ok {
					return reading{}
				}
				if !sameValue(got, want) {
					good = false
				}
			}
		}
		r = seen(good, "the table cells are shown")
	}
	if r.found && v.dirty {
		r.weak, r.note = true, r.note+" with unsaved changes"
	}
	return r
}

func sortedValues(vals []string, desc bool) bool {
	less := func(a, b string) bool {
		x, e1 := strconv.ParseFloat(a, 64)
		y, e2 := strconv.ParseFloat(b, 64)
		if e1 == nil && e2 == nil {
			return x < y
		}
		return strings.ToLower(a) < strings.ToLower(b)
	}
	for i := 1; i < len(vals); i++ {
		if desc && less(vals[i-1], vals[i]) || !desc && less(vals[i], vals[i-1]) {
			return false
		}
	}
	return true
}
