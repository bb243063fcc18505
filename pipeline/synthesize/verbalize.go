package synthesize

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// verbalize writes an instruction stating what the criteria check, given
// the files the setup creates: the fixer's rewrite of an ambiguous
// instruction, and the instruction of a split task.
func verbalize(crits []judge.Criterion, setup string) string {
	files := setupFiles(setup)
	short := vfs.Short
	var out []string
	say := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	used := make([]bool, len(crits))
	type fileWant struct {
		exists, missing, folder bool
		content                 *string
		crit                    []int
	}
	byPath := map[string]*fileWant{}
	var order []string
	want := func(p string) *fileWant {
		if w, ok := byPath[p]; ok {
			return w
		}
		w := &fileWant{}
		byPath[p] = w
		order = append(order, p)
		return w
	}
	for i, c := range crits {
		g := c.Result
		if g == nil {
			continue
		}
		switch {
		case g.Type == "file_exists" && c.Func == "is_true":
			want(g.Path).exists = true
		case (g.Type == "file_exists" || g.Type == "folder_exists") && c.Func == "is_false":
			want(g.Path).missing = true
		case g.Type == "folder_exists" && c.Func == "is_true":
			want(g.Path).folder = true
		case g.Type == "file_content" && c.Func == "exact_match" && c.Expected != nil && c.Expected.Rules != nil:
			s := judge.Text(c.Expected.Rules.Expected)
			want(g.Path).content = &s
		default:
			continue
		}
		used[i] = true
		byPath[g.Path].crit = append(byPath[g.Path].crit, i)
	}
	done := map[string]bool{}
	// A path that disappears while one with the same name or folder appears
	// is a move or a rename; one that appears with the content of a setup
	// file of the same name is a copy.
	for _, m := range order {
		wm := byPath[m]
		if !wm.missing || done[m] {
			continue
		}
		for _, p := range order {
			wp := byPath[p]
			if done[p] || p == m || (!wp.exists && wp.content == nil) {
				continue
			}
			if _, inSetup := files[p]; inSetup {
				continue
			}
			switch {
			case path.Base(p) == path.Base(m):
				say("Move %s into %s.", short(m), short(path.Dir(p)))
			case path.Dir(p) == path.Dir(m):
				say("Rename %s to %q.", short(m), path.Base(p))
			default:
				continue
			}
			done[m], done[p] = true, true
			if wp.content != nil && files[m] != *wp.content {
				say("%s must contain exactly this text:\n%s", short(p), *wp.content)
			}
			break
		}
	}
	for _, p := range order {
		wp := byPath[p]
		if done[p] || wp.content == nil {
			continue
		}
		if _, inSetup := files[p]; inSetup {
			continue
		}
		for _, s := range order {
			if c, ok := files[s]; ok && s != p && path.Base(s) == path.Base(p) && c == *wp.content {
				say("Copy %s into %s, keeping the original.", short(s), short(path.Dir(p)))
				done[p] = true
				if ws := byPath[s]; ws != nil && ws.content != nil && *ws.content == c {
					done[s] = true
				}
				break
			}
		}
	}
	for _, p := range order {
		if done[p] {
			continue
		}
		wp := byPath[p]
		cur, inSetup := files[p]
		switch {
		case wp.folder:
			say("Create the folder %s.", short(p))
		case wp.missing && inSetup:
			say("Delete %s.", short(p))
		case wp.missing:
			say("Make sure %s does not exist.", short(p))
		case wp.content != nil && inSetup && cur == *wp.content:
			say("Leave %s unchanged.", short(p))
		case wp.content != nil:
			say("Make sure %s contains exactly this text, and save it:\n%s", short(p), *wp.content)
		case wp.exists && inSetup:
			say("Leave %s in place.", short(p))
		case wp.exists:
			say("Create the file %s.", short(p))
		}
	}
	// Include/exclude on a file, cells and tables, grouped by file.
	cells := map[string][]string{}
	var cellOrder []string
	for i, c := range crits {
		g := c.Result
		if used[i] || g == nil || c.Expected == nil || c.Expected.Rules == nil {
			continue
		}
		r := c.Expected.Rules
		switch g.Type {
		case "file_content":
			if c.Func == "check_include_exclude" {
				s := fmt.Sprintf("Make sure %s contains %s", short(g.Path), quoteAll(r.Include))
				if len(r.Include) == 0 {
					s = "Edit " + short(g.Path)
				}
				if len(r.Exclude) > 0 {
					s += " and no longer contains " + quoteAll(r.Exclude)
				}
				say("%s, then save it.", s)
				used[i] = true
			}
		case "sheet_cell", "sheet_cell_raw":
			v := judge.Text(r.Expected)
			var part string
			if strings.HasPrefix(v, "=") {
				part = fmt.Sprintf("enter the formula %s in cell %s", strings.ToUpper(v), g.Cell)
			} else {
				// A value next to a formula for the same cell is implied.
				if slices.ContainsFunc(crits, func(o judge.Criterion) bool {
					return o.Result != nil && o.Result.Type == "sheet_cell_raw" && o.Result.Path == g.Path && o.Result.Cell == g.Cell
				}) && g.Type == "sheet_cell" {
					used[i] = true
					continue
				}
				part = fmt.Sprintf("set cell %s to %s", g.Cell, v)
			}
			if _, ok := cells[g.Path]; !ok {
				cellOrder = append(cellOrder, g.Path)
			}
			cells[g.Path] = append(cells[g.Path], part)
			used[i] = true
		case "sheet_table":
			rows, ok := tableOfAny(r.Expected)
			if !ok {
				continue
			}
			used[i] = true
			if s := sortSentence(g.Path, rows, files[g.Path]); s != "" {
				say("%s", s)
				continue
			}
			var lines []string
			for _, row := range rows {
				lines = append(lines, strings.Join(row, " | "))
			}
			say("Make %s a sheet holding exactly this table (first row is the header, starting at A1), and save it:\n%s", short(g.Path), strings.Join(lines, "\n"))
		}
	}
	for _, p := range cellOrder {
		say("In %s, %s, and save the file.", short(p), strings.Join(cells[p], ", "))
	}
	// Settings.
	for i, c := range crits {
		g := c.Result
		if used[i] || g == nil || g.Type != "setting" {
			continue
		}
		def := simdesk.SettingByKey(g.Key)
		if def == nil {
			continue
		}
		used[i] = true
		switch {
		case c.Func == "is_true":
			say("Turn on %q in the %s settings.", def.Label, pageTitle(def.Key))
		case c.Func == "is_false":
			say("Turn off %q in the %s settings.", def.Label, pageTitle(def.Key))
		case c.Expected != nil && c.Expected.Rules != nil:
			say("Set %q in the %s settings to %s.", def.Label, pageTitle(def.Key), spoken(def, judge.Text(c.Expected.Rules.Expected)))
		}
	}
	// Mail: one message.
	mail := map[string]string{}
	for i, c := range crits {
		g := c.Result
		if used[i] || g == nil || g.Type != "sent_mail" || c.Expected == nil || c.Expected.Rules == nil {
			continue
		}
		used[i] = true
		r := c.Expected.Rules
		switch {
		case c.Func == "check_include_exclude":
			mail[g.Field+"~"] = quoteAll(r.Include)
		case g.Field == "attachments":
			items, _ := tableOfAny([]any{r.Expected})
			if len(items) == 1 {
				var ps []string
				for _, p := range items[0] {
					ps = append(ps, short(p))
				}
				mail["attachments"] = strings.Join(ps, " and ")
			}
		default:
			mail[g.Field] = judge.Text(r.Expected)
		}
	}
	if len(mail) > 0 {
		s := "Send an email"
		if v := mail["to"]; v != "" {
			s += " to " + v
		}
		if v := mail["cc"]; v != "" {
			s += ", with " + v + " in Cc"
		}
		if v := mail["subject"]; v != "" {
			s += fmt.Sprintf(", with the subject %q", v)
		}
		if v := mail["body"]; v != "" {
			s += fmt.Sprintf(", with this body:\n%s\n", v)
		}
		if v := mail["body~"]; v != "" {
			s += ", whose body says " + v
		}
		if v := mail["attachments"]; v != "" {
			s += ", attaching " + v
		}
		say("%s.", strings.TrimRight(s, "\n"))
	}
	for i, c := range crits {
		g := c.Result
		if used[i] || g == nil {
			continue
		}
		switch {
		case g.Type == "editor_dirty" && c.Func == "is_false":
			say("Save the open document.")
		case g.Type == "window_open" && c.Func == "is_true":
			say("Open the %s app.", g.App)
		case g.Type == "window_open" && c.Func == "is_false":
			say("Close the %s app.", g.App)
		case g.Type == "active_window" && c.Expected != nil && c.Expected.Rules != nil:
			say("Bring the %s app to the front.", judge.Text(c.Expected.Rules.Expected))
		}
	}
	return strings.Join(out, " ")
}

func quoteAll(items []string) string {
	var q []string
	for _, s := range items {
		q = append(q, fmt.Sprintf("%q", s))
	}
	return strings.Join(q, " and ")
}

// tableOfAny reads a table literal (a list of rows of scalars).
func tableOfAny(v any) ([][]string, bool) {
	rows, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		cells, ok := r.([]any)
		if !ok {
			return nil, false
		}
		for _, c := range cells {
			out[i] = append(out[i], judge.Text(c))
		}
	}
	return out, true
}

// sortSentence says "sort by column" when want is the setup's table sorted.
func sortSentence(p string, want [][]string, csv string) string {
	if csv == "" {
		return ""
	}
	sh, err := sheet.ParseCSV(csv)
	if err != nil || len(sh.Cells) < 2 {
		return ""
	}
	for col := 0; col < len(sh.Cells[0]); col++ {
		for _, desc := range []bool{false, true} {
			s := sh.Clone()
			s.SortRows(col, 1, desc)
			if slices.EqualFunc(s.Table(), want, slices.Equal) || slices.EqualFunc(s.Cells, want, slices.Equal) {
				order := map[bool]string{false: "ascending", true: "descending"}[desc]
				return fmt.Sprintf("Sort the rows of %s by the %s column in %s order, keeping the header row on top, and save the file.", vfs.Short(p), sh.Cells[0][col], order)
			}
		}
	}
	return ""
}
