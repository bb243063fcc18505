package verify

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// MaxCriteria bounds the criteria of one judgment (VeriCUA: 3 to 5).
const MaxCriteria = 5

// The builtin Judge writes criteria from the instruction alone: it knows
// the simulator's apps (folders, the settings catalogue, mail fields,
// sheets) the way a prompted Judge knows desktop software, but it never
// reads the task's executable judge or the hidden state.

var (
	rxPath = `(~/[^\s"]+?)`
	// end of a path: a space, a quote, a colon or period before space or end
	rxPathEnd = `(?:[.:,]?(?:\s|$|"))`

	reCreateExact = regexp.MustCompile(`(?s)create ` + rxPath + ` containing exactly this text:\n(.+)$`)
	reOneLine     = regexp.MustCompile(`write a text file ` + rxPath + ` containing one line: "([^"]*)"`)
	reWithContent = regexp.MustCompile(`(?s)file ` + rxPath + ` with this content:\n(.+?)\n\n`)
	reAddLine     = regexp.MustCompile(`Open ` + rxPath + ` in the text editor, add the line "([^"]*)"`)
	reChangeLine  = regexp.MustCompile(`Edit ` + rxPath + `: change line \d+ to read "([^"]*)"`)
	reReplace     = regexp.MustCompile(`replace every occurrence of "([^"]*)" with "([^"]*)"`)
	reUnsaved     = regexp.MustCompile(`(?i)open document has unsaved changes`)
	reSaveCopy    = regexp.MustCompile(`Save a copy of the open document as ` + rxPath + rxPathEnd)
	reNewFolder   = regexp.MustCompile(`(?i)folder named "([^"]+)" (?:in|inside) (?:your |the )?(\w+)(?: folder)?`)
	reEmptyFile   = regexp.MustCompile(`(?i)create an empty file called "([^"]+)" in (?:your |the )?(\w+)`)
	reRename      = regexp.MustCompile(`In the (\w+) folder, rename "([^"]+)" to "([^"]+)"`)
	reDelete      = regexp.MustCompile(`Delete the file "([^"]+)" from the (\w+) folder`)
	reMoveInside  = regexp.MustCompile(`Move "([^"]+)" from (\w+) into the (\w+) folder inside (\w+)`)
	reMove        = regexp.MustCompile(`Move "([^"]+)" from (\w+) into the (\w+) folder`)
	reMoveEvery   = regexp.MustCompile(`move every (\.\w+) file from (\w+) into it`)
	reFormula     = regexp.MustCompile(`Open ` + rxPath + ` and, in cell ([A-Z]+\d+), enter a formula that computes the (\w+) of .*?\(([A-Z]+\d+:[A-Z]+\d+)\)`)
	reSort        = regexp.MustCompile(`Sort the rows of ` + rxPath + ` by the (\w+) column in (ascending|descending) order`)
	reNewSheet    = regexp.MustCompile(`(?s)save it as ` + rxPath + `:\n(.+)$`)
	reChangeCell  = regexp.MustCompile(`In ` + rxPath + `, change the (\w+) of (\w+) to ([^\s]+?) and save`)
	reTotals      = regexp.MustCompile(`Open ` + rxPath + ` and add a totals row.*?put the word (\w+) in ([A-Z]+\d+) and (\w+) formulas for .*? in ([A-Z]+\d+) and ([A-Z]+\d+)`)
	reToggle      = regexp.MustCompile(`(Turn on|Turn off) "([^"]+)" in the (\w+) settings`)
	reSetIn       = regexp.MustCompile(`In Settings > (\w+), set "([^"]+)" to (.+?)\.$`)
	reSetText     = regexp.MustCompile(`Set "([^"]+)" in the (\w+) settings to (.+?)\.$`)
	reSetSlider   = regexp.MustCompile(`Set "([^"]+)" \((\w+) settings\) to (\d+)%`)
	reChangeList  = regexp.MustCompile(`Change these settings: (.+)\.$`)
	reSend        = regexp.MustCompile(`Send an email to (\S+@\S+?) with the subject "([^"]*)" and the body "([^"]*)"`)
	reReply       = regexp.MustCompile(`Reply to the email from .+? about "([^"]*)" with the text "([^"]*)"`)
	reAttach      = regexp.MustCompile(`Email the file ` + rxPath + ` to (\S+@\S+?) as an attachment, with the subject "([^"]*)"`)
	reCc          = regexp.MustCompile(`(?s)Write an email to (\S+@\S+?), with (\S+@\S+?) in Cc, subject "([^"]*)", and this body:\n(.+?)\nThen send it`)
	reEmailIt     = regexp.MustCompile(`email it as an attachment to (\S+@\S+?) with the subject "([^"]*)"`)
	reSaveMention = regexp.MustCompile(`(?i)\bsave\b`)
)

// placeDir resolves "Documents", "your Desktop", "Home" to a folder.
func placeDir(name string) string {
	switch strings.ToLower(name) {
	case "home":
		return vfs.Home
	case "desktop", "documents", "downloads", "pictures":
		return vfs.Home + "/" + strings.ToUpper(name[:1]) + strings.ToLower(name[1:])
	}
	return vfs.Home + "/" + name
}

func absPath(p string) string {
	p = strings.TrimRight(p, ".:,")
	if c, err := vfs.Clean(p); err == nil {
		return c
	}
	return p
}

// criteriaWriter accumulates checks without duplicates.
type criteriaWriter struct{ out []Criterion }

func (w *criteriaWriter) add(text string, c Check) {
	for _, o := range w.out {
		if o.Check != nil && *o.Check == c {
			return
		}
	}
	cc := c
	w.out = append(w.out, Criterion{Text: text, Status: Uncertain, Check: &cc})
}

func short(p string) string {
	if p == "" {
		return "the open document"
	}
	return vfs.Short(p)
}

func filesWhere(p string) string { return "Files > " + vfs.Short(path.Dir(p)) }

func (w *criteriaWriter) exists(p string, folder bool) {
	what := "file"
	if folder {
		what = "folder"
	}
	w.add(fmt.Sprintf("The %s %s exists (listed in %s)", what, short(p), filesWhere(p)),
		Check{Kind: KindExists, Path: p, Where: filesWhere(p)})
}

func (w *criteriaWriter) absent(p string) {
	w.add(fmt.Sprintf("%s no longer exists (not listed in %s)", short(p), filesWhere(p)),
		Check{Kind: KindAbsent, Path: p, Where: filesWhere(p)})
}

func where(p string) string {
	if p == "" {
		return "the editor window"
	}
	return filesWhere(p) + ", opened in its app"
}

func (w *criteriaWriter) content(kind, p, want string) {
	verb := map[string]string{KindContent: "holds exactly", KindIncludes: "contains", KindExcludes: "no longer contains"}[kind]
	w.add(fmt.Sprintf("The saved file %s %s %q", short(p), verb, want), Check{Kind: kind, Path: p, Want: want, Where: where(p)})
}

func (w *criteriaWriter) saved(p string) {
	app := "Text Editor"
	if strings.HasSuffix(strings.ToLower(p), ".csv") {
		app = "Sheet"
	}
	w.add(fmt.Sprintf("The change to %s is saved (no unsaved-changes marker in the %s title)", short(p), app),
		Check{Kind: KindSaved, Path: p, Where: app + " window title"})
}

func (w *criteriaWriter) setting(key, want string) {
	def := simdesk.SettingByKey(key)
	if def == nil {
		return
	}
	shown := want
	switch want {
	case "true":
		shown = "on"
	case "false":
		shown = "off"
	}
	loc := "Settings > " + pageTitle(key)
	w.add(fmt.Sprintf("%q is set to %s (%s)", def.Label, shown, loc), Check{Kind: KindSetting, Key: key, Want: want, Where: loc})
}

func (w *criteriaWriter) mail(field, want string) {
	text := map[string]string{
		"to":         "A sent message is addressed to %s",
		"cc":         "The sent message has %s in Cc",
		"subject":    "The sent message's subject is %q",
		"body":       "The sent message's body contains %q",
		"attachment": "The sent message has %s attached",
	}[field]
	w.add(fmt.Sprintf(text+" (Mail > Sent)", want), Check{Kind: KindMail, Field: field, Want: want, Where: "Mail > Sent"})
}

func (w *criteriaWriter) cell(p, cell, want string, raw bool) {
	what := "shows"
	if raw {
		what = "holds the formula"
		if strings.HasSuffix(want, "(") {
			what = "holds a formula starting with"
		}
	}
	w.add(fmt.Sprintf("In the saved %s, cell %s %s %q", short(p), cell, what, want),
		Check{Kind: KindCell, Path: p, Cell: cell, Want: want, Raw: raw, Where: where(p)})
}

func pageTitle(key string) string {
	for _, p := range simdesk.Pages {
		for _, s := range p.Settings {
			if s.Key == key {
				return p.Title
			}
		}
	}
	return ""
}

// settingByLabel finds a catalogue setting by its label, optionally on a
// page (by title), case-insensitively.
func settingByLabel(label, page string) *simdesk.SettingDef {
	for _, p := range simdesk.Pages {
		if page != "" && !strings.EqualFold(p.Title, page) {
			continue
		}
		for _, s := range p.Settings {
			if strings.EqualFold(s.Label, label) {
				return s
			}
		}
	}
	return nil
}

// settingValue turns what an instruction says ("on", "Deutsch", "15%")
// into the setting's stored text.
func settingValue(def *simdesk.SettingDef, v string) string {
	v = strings.TrimSpace(v)
	bare := strings.TrimSpace(strings.TrimSuffix(v, "%"))
	switch def.Kind {
	case simdesk.KindToggle:
		switch strings.ToLower(bare) {
		case "on", "true", "enabled":
			return "true"
		case "off", "false", "disabled":
			return "false"
		}
	case simdesk.KindChoice:
		for _, o := range def.Options {
			if strings.EqualFold(o, v) || strings.EqualFold(strings.TrimSuffix(o, "%"), bare) {
				return o
			}
		}
	case simdesk.KindSlider:
		return bare
	}
	return v
}

// WriteCriteria is the builtin Judge's first step: concrete criteria, each
// naming its evidence location, from the instruction; at most
// MaxCriteria, all uncertain until assessed. An instruction it cannot make
// concrete gets one claim criterion: that the task asks for something this
// desktop cannot do.
func WriteCriteria(instruction string) []Criterion {
	w := &criteriaWriter{}
	ins := strings.TrimSpace(instruction)
	save := reSaveMention.MatchString(ins)
	if m := reCreateExact.FindStringSubmatch(ins); m != nil {
		w.content(KindContent, absPath(m[1]), strings.TrimSpace(m[2]))
	}
	if m := reOneLine.FindStringSubmatch(ins); m != nil {
		p := absPath(m[1])
		if i := strings.Index(m[2], "<"); i >= 0 {
			w.exists(p, false)
			w.content(KindIncludes, p, strings.TrimSpace(m[2][:i]))
		} else {
			w.content(KindContent, p, m[2])
		}
	}
	if m := reWithContent.FindStringSubmatch(ins); m != nil {
		w.content(KindContent, absPath(m[1]), strings.TrimSpace(m[2]))
	}
	if m := reAddLine.FindStringSubmatch(ins); m != nil {
		p := absPath(m[1])
		w.content(KindIncludes, p, m[2])
		if save {
			w.saved(p)
		}
	}
	if m := reChangeLine.FindStringSubmatch(ins); m != nil {
		p := absPath(m[1])
		w.content(KindIncludes, p, m[2])
		if save {
			w.saved(p)
		}
	}
	if m := reReplace.FindStringSubmatch(ins); m != nil {
		w.content(KindIncludes, "", m[2])
		w.content(KindExcludes, "", m[1])
		if save {
			w.saved("")
		}
	}
	if reUnsaved.MatchString(ins) {
		w.saved("")
	}
	if m := reSaveCopy.FindStringSubmatch(ins); m != nil {
		w.exists(absPath(m[1]), false)
	}
	if m := reNewFolder.FindStringSubmatch(ins); m != nil {
		w.exists(placeDir(m[2])+"/"+m[1], true)
		if e := reMoveEvery.FindStringSubmatch(ins); e != nil {
			src := placeDir(e[2])
			w.add(fmt.Sprintf("No %s file is left in %s (Files > %s)", e[1], vfs.Short(src), vfs.Short(src)),
				Check{Kind: KindNoExtIn, Path: src, Want: e[1], Where: "Files > " + vfs.Short(src)})
		}
	}
	if m := reEmptyFile.FindStringSubmatch(ins); m != nil {
		w.exists(placeDir(m[2])+"/"+m[1], false)
	}
	if m := reRename.FindStringSubmatch(ins); m != nil {
		dir := placeDir(m[1])
		w.exists(dir+"/"+m[3], false)
		w.absent(dir + "/" + m[2])
	}
	if m := reDelete.FindStringSubmatch(ins); m != nil {
		w.absent(placeDir(m[2]) + "/" + m[1])
	}
	if m := reMoveInside.FindStringSubmatch(ins); m != nil {
		w.exists(placeDir(m[4])+"/"+m[3]+"/"+m[1], false)
		w.absent(placeDir(m[2]) + "/" + m[1])
	} else if m := reMove.FindStringSubmatch(ins); m != nil {
		w.exists(placeDir(m[3])+"/"+m[1], false)
		w.absent(placeDir(m[2]) + "/" + m[1])
	}
	if m := reFormula.FindStringSubmatch(ins); m != nil {
		p := absPath(m[1])
		fn := map[string]string{"sum": "SUM", "average": "AVERAGE", "minimum": "MIN", "maximum": "MAX"}[strings.ToLower(m[3])]
		if fn != "" {
			w.cell(p, m[2], "="+fn+"("+m[4]+")", true)
		}
		if save {
			w.saved(p)
		}
	}
	if m := reSort.FindStringSubmatch(ins); m != nil {
		p := absPath(m[1])
		order := map[string]string{"ascending": "asc", "descending": "desc"}[m[3]]
		w.add(fmt.Sprintf("The saved %s is sorted by %s (%sending) under its header row", short(p), m[2], order),
			Check{Kind: KindSorted, Path: p, Column: m[2], Want: order, Where: where(p)})
		if save {
			w.saved(p)
		}
	}
	if m := reNewSheet.FindStringSubmatch(ins); m != nil {
		p := absPath(m[1])
		var rows [][]string
		for _, line := range strings.Split(strings.TrimSpace(m[2]), "\n") {
			var cells []string
			for _, c := range strings.Split(line, "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			rows = append(rows, cells)
		}
		b, _ := json.Marshal(rows)
		w.add(fmt.Sprintf("The saved %s holds the %d-row table from the instruction, header in row 1", short(p), len(rows)),
			Check{Kind: KindTable, Path: p, Want: string(b), Where: where(p)})
	}
	if m := reChangeCell.FindStringSubmatch(ins); m != nil {
		p := absPath(m[1])
		w.add(fmt.Sprintf("In the saved %s, the %s of %s is %s", short(p), m[2], m[3], m[4]),
			Check{Kind: KindLookup, Path: p, Column: m[2], Row: m[3], Want: m[4], Where: where(p)})
		w.saved(p)
	}
	if m := reTotals.FindStringSubmatch(ins); m != nil {
		p := absPath(m[1])
		w.cell(p, m[3], m[2], false)
		w.cell(p, m[5], "="+strings.ToUpper(m[4])+"(", true)
		w.cell(p, m[6], "="+strings.ToUpper(m[4])+"(", true)
		w.saved(p)
	}
	writeSettings(w, ins)
	if m := reSend.FindStringSubmatch(ins); m != nil {
		w.mail("to", m[1])
		w.mail("subject", m[2])
		w.mail("body", m[3])
	}
	if m := reReply.FindStringSubmatch(ins); m != nil {
		w.mail("subject", "Re: "+m[1])
		w.mail("body", m[2])
	}
	if m := reAttach.FindStringSubmatch(ins); m != nil {
		w.mail("to", m[2])
		w.mail("subject", m[3])
		w.mail("attachment", path.Base(absPath(m[1])))
	}
	if m := reCc.FindStringSubmatch(ins); m != nil {
		w.mail("to", m[1])
		w.mail("cc", m[2])
		w.mail("subject", m[3])
		w.mail("body", strings.TrimSpace(m[4]))
	}
	if m := reEmailIt.FindStringSubmatch(ins); m != nil {
		w.mail("to", m[1])
		w.mail("subject", m[2])
		if c := reWithContent.FindStringSubmatch(ins); c != nil {
			w.mail("attachment", path.Base(absPath(c[1])))
		}
	}
	if len(w.out) > MaxCriteria {
		w.out = w.out[:MaxCriteria]
	}
	return w.out
}

// writeSettings adds the setting criteria an instruction names.
func writeSettings(w *criteriaWriter, ins string) {
	if m := reToggle.FindStringSubmatch(ins); m != nil {
		if def := settingByLabel(m[2], m[3]); def != nil {
			w.setting(def.Key, map[string]string{"Turn on": "true", "Turn off": "false"}[m[1]])
		}
	}
	if m := reSetIn.FindStringSubmatch(ins); m != nil {
		if def := settingByLabel(m[2], m[1]); def != nil {
			w.setting(def.Key, settingValue(def, m[3]))
		}
	}
	if m := reSetText.FindStringSubmatch(ins); m != nil {
		if def := settingByLabel(m[1], m[2]); def != nil {
			w.setting(def.Key, settingValue(def, m[3]))
		}
	}
	if m := reSetSlider.FindStringSubmatch(ins); m != nil {
		if def := settingByLabel(m[1], m[2]); def != nil {
			w.setting(def.Key, m[3])
		}
	}
	if m := reChangeList.FindStringSubmatch(ins); m != nil {
		for _, part := range strings.Split(m[1], "; ") {
			// "<Page> <label, lower case> to <value>"
			page, rest, ok := strings.Cut(part, " ")
			if !ok {
				continue
			}
			i := strings.LastIndex(rest, " to ")
			if i < 0 {
				continue
			}
			if def := settingByLabel(rest[:i], page); def != nil {
				w.setting(def.Key, settingValue(def, rest[i+4:]))
			}
		}
	}
}
