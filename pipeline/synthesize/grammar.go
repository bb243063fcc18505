package synthesize

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// The builtin proposer is a grammar of app capabilities: each capability
// ("files.rename") draws its parameters from seeded vocabularies, wider
// than the built-in pool's, renders one of several phrasings, and writes the
// setup and judge that go with it. It knows what its instruction means, so
// it also keeps a reference for the referee.

// draft is one rendered capability before any flaw.
type draft struct {
	op          string
	app         string
	abilities   []string
	instruction string
	// vague is the instruction with a key value replaced by vague wording,
	// for the ambiguous flaw ("" when the capability has none).
	vague    string
	setup    []simdesk.SetupStep
	criteria []judge.Criterion
	// conveys are the literals the instruction must state to be solvable.
	conveys []string
	// inputs are indices of setup steps creating files the instruction
	// presupposes (the missing-setup flaw drops one).
	inputs []int
	// achieve are setup steps that would satisfy the goal before the agent
	// acts (the already-done flaw appends them).
	achieve []simdesk.SetupStep
}

type op struct {
	id  string
	gen func(r *rand.Rand) draft
}

// Vocabularies. They overlap the built-in pool's on purpose (duplicates of
// the pool must be caught) but are wider, so proposals go beyond it.
var (
	vTopics = []string{"budget", "meeting", "roadmap", "invoice", "travel", "recipes", "garden", "training", "launch", "inventory",
		"hiring", "research", "vendors", "backlog", "payroll", "audit", "marketing", "onboarding", "security", "quarterly",
		"workshop", "newsletter", "contracts", "support", "warehouse", "pricing", "benefits", "events", "design", "release"}
	vFolders = []string{"Projects", "Archive", "Reports", "Invoices", "Drafts", "Travel", "Receipts", "Clients", "Taxes", "Scans",
		"Notes", "Old", "Photos", "Letters", "Backups", "Templates", "Minutes", "Offers", "Plans", "Shared"}
	vPlaces = []string{"Documents", "Desktop", "Downloads", "Pictures"}
	vPeople = []string{"Alice Martin", "Bob Chen", "Carol Diaz", "Dan Evans", "Erin Fox", "Frank Green", "Grace Hall", "Hank Irwin",
		"Ivy Jones", "Jack King", "Kate Lee", "Liam Moore", "Maya Novak", "Omar Reyes", "Priya Shah", "Quinn Taylor",
		"Rosa Ueda", "Sam Vance", "Tara West", "Victor Zhang"}
	vSentences = []string{"The meeting moved to Tuesday.", "Remember to back up the database.", "Lunch is at noon.",
		"Ship the release on Friday.", "Call the supplier about the delay.", "The printer on floor 2 is fixed.",
		"Budget review starts at 10am.", "Pack the demo laptop.", "Send the slides to the team.",
		"Water the office plants.", "Renew the domain name.", "Book the train tickets.",
		"The new badges arrive on Monday.", "Archive last year's receipts.", "Order more coffee filters.",
		"Update the onboarding checklist.", "The fire drill is at 3pm.", "Confirm the venue for the offsite.",
		"Collect feedback from the pilot users.", "Reset the guest Wi-Fi password.", "File the travel expenses by Thursday.",
		"Move the standup to 9:30.", "Print the visitor passes.", "Review the vendor contracts."}
	vCities = []string{"Berlin", "Lisbon", "Oslo", "Madrid", "Vienna", "Dublin", "Prague", "Warsaw", "Athens", "Rome",
		"Zurich", "Helsinki", "Porto", "Krakow", "Riga", "Tallinn"}
	vItems = []string{"Pens", "Paper", "Stapler", "Folders", "Tape", "Markers", "Envelopes", "Binders", "Labels", "Clips",
		"Ink", "Notebooks", "Scissors", "Glue", "Rulers", "Erasers"}
	vSuffixes = [][2]string{{"old", "2024"}, {"draft", "final"}, {"v1", "v2"}, {"tmp", "keep"}, {"copy", "main"}, {"new", "2025"}}
)

func pickOne[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

// pickN draws n distinct elements.
func pickN[T any](r *rand.Rand, list []T, n int) []T {
	idx := r.Perm(len(list))[:n]
	out := make([]T, n)
	for i, k := range idx {
		out[i] = list[k]
	}
	return out
}

func emailOf(person string) string {
	parts := strings.Fields(strings.ToLower(person))
	return parts[0] + "." + parts[len(parts)-1] + "@example.com"
}

func titleCase(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

func fileText(r *rand.Rand, topic string) string {
	return fmt.Sprintf("%s notes\nowner: %s\nstatus: draft %d\n", titleCase(topic), pickOne(r, vPeople), 1+r.IntN(9))
}

func listDoc(r *rand.Rand, lines int) string {
	var b strings.Builder
	for k, s := range pickN(r, vSentences, lines) {
		fmt.Fprintf(&b, "%d. %s\n", k+1, s)
	}
	return b.String()
}

// Judge and setup helpers.

func gFile(typ, p string) *judge.Getter { return &judge.Getter{Type: typ, Path: p} }

func gRule(v any) *judge.Getter { return &judge.Getter{Type: "rule", Rules: &judge.Rules{Expected: v}} }

func cr(fn string, result, expected *judge.Getter, o judge.Options) judge.Criterion {
	return judge.Criterion{Func: fn, Result: result, Expected: expected, Options: o}
}

func cExists(p string) judge.Criterion {
	return cr("is_true", gFile("file_exists", p), nil, judge.Options{})
}
func cMissing(p string) judge.Criterion {
	return cr("is_false", gFile("file_exists", p), nil, judge.Options{})
}
func cFolder(p string) judge.Criterion {
	return cr("is_true", gFile("folder_exists", p), nil, judge.Options{})
}
func cContent(p, text string, strip bool) judge.Criterion {
	return cr("exact_match", gFile("file_content", p), gRule(text), judge.Options{Strip: strip})
}
func cMail(field string, want any, o judge.Options) judge.Criterion {
	return cr("exact_match", &judge.Getter{Type: "sent_mail", Field: field}, gRule(want), o)
}

func sCreate(p, text string) simdesk.SetupStep {
	return simdesk.Step("create_file", map[string]string{"path": p, "content": text})
}
func sFolder(p string) simdesk.SetupStep {
	return simdesk.Step("create_folder", map[string]string{"path": p})
}
func sOpen(p string) simdesk.SetupStep {
	return simdesk.Step("open_file", map[string]string{"path": p})
}
func sApp(app string) simdesk.SetupStep {
	return simdesk.Step("open_app", map[string]string{"app": app})
}
func sSetting(key, v string) simdesk.SetupStep {
	return simdesk.Step("set_setting", map[string]string{"key": key, "value": v})
}

func absPath(p string) string {
	c, err := vfs.Clean(p)
	if err != nil {
		return p
	}
	return c
}

func base(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// ops returns every capability of the grammar, by id.
func ops() map[string]op {
	m := map[string]op{}
	for _, list := range [][]op{filesOps(), editorOps(), sheetOps(), settingsOps(), mailOps()} {
		for _, o := range list {
			m[o.id] = o
		}
	}
	return m
}

var grammar = ops()

// Files.

func filesOps() []op {
	return []op{
		{"files.mkdir", func(r *rand.Rand) draft {
			name, place := pickOne(r, vFolders), pickOne(r, vPlaces)
			p := "~/" + place + "/" + name
			ins := pickOne(r, []string{
				fmt.Sprintf("Create a new folder named %q in your %s folder.", name, place),
				fmt.Sprintf("Using the file manager, make a folder called %q inside ~/%s.", name, place),
				fmt.Sprintf("In the file manager, create a folder named %q under %s.", name, place)})
			return draft{abilities: []string{"navigate", "create_folder"}, instruction: ins,
				vague:    fmt.Sprintf("Create a new folder with a suitable name in your %s folder.", place),
				criteria: []judge.Criterion{cFolder(p)}, conveys: []string{name},
				achieve: []simdesk.SetupStep{sFolder(p)}}
		}},
		{"files.mkdir_nested", func(r *rand.Rand) draft {
			names := pickN(r, vFolders, 2)
			place := pickOne(r, vPlaces[:2])
			p := fmt.Sprintf("~/%s/%s/%s", place, names[0], names[1])
			ins := pickOne(r, []string{
				fmt.Sprintf("Create the folder %s, making %q first since it does not exist yet.", p, names[0]),
				fmt.Sprintf("In %s, create a folder named %q and inside it a folder named %q.", place, names[0], names[1])})
			return draft{abilities: []string{"navigate", "create_folder", "multi_step"}, instruction: ins,
				vague:    fmt.Sprintf("Create a folder inside a new folder somewhere in %s.", place),
				criteria: []judge.Criterion{cFolder(p)}, conveys: []string{names[0], names[1]},
				achieve: []simdesk.SetupStep{sFolder(p)}}
		}},
		{"files.newfile", func(r *rand.Rand) draft {
			name := pickOne(r, vTopics) + pickOne(r, []string{".txt", ".md", "-list.txt"})
			place := pickOne(r, vPlaces)
			p := "~/" + place + "/" + name
			ins := pickOne(r, []string{
				fmt.Sprintf("Using the file manager, create an empty file called %q in %s.", name, place),
				fmt.Sprintf("Create a new empty file named %q in your %s folder.", name, place)})
			return draft{abilities: []string{"navigate", "create_file"}, instruction: ins,
				vague:    fmt.Sprintf("Create an empty file with an appropriate name in %s.", place),
				criteria: []judge.Criterion{cExists(p)}, conveys: []string{name},
				achieve: []simdesk.SetupStep{sCreate(p, "")}}
		}},
		{"files.rename", func(r *rand.Rand) draft {
			topic, place, sfx := pickOne(r, vTopics), pickOne(r, vPlaces), pickOne(r, vSuffixes)
			oldN, newN := topic+"-"+sfx[0]+".txt", topic+"-"+sfx[1]+".txt"
			oldP, newP := "~/"+place+"/"+oldN, "~/"+place+"/"+newN
			text := fileText(r, topic)
			ins := pickOne(r, []string{
				fmt.Sprintf("In the %s folder, rename %q to %q.", place, oldN, newN),
				fmt.Sprintf("Rename the file %s to %q.", oldP, newN),
				fmt.Sprintf("Give %q in %s the new name %q.", oldN, place, newN)})
			return draft{abilities: []string{"navigate", "select", "rename"}, instruction: ins,
				vague:    fmt.Sprintf("In the %s folder, rename %q to something more current.", place, oldN),
				setup:    []simdesk.SetupStep{sCreate(oldP, text)},
				criteria: []judge.Criterion{cExists(newP), cMissing(oldP), cContent(newP, text, false)},
				conveys:  []string{oldN, newN}, inputs: []int{0}}
		}},
		{"files.delete", func(r *rand.Rand) draft {
			ts := pickN(r, vTopics, 2)
			place := pickOne(r, vPlaces)
			victimN := ts[0] + pickOne(r, []string{"-copy", "-old", "-tmp", "-duplicate"}) + ".txt"
			victim, keep := "~/"+place+"/"+victimN, "~/"+place+"/"+ts[1]+".txt"
			ins := pickOne(r, []string{
				fmt.Sprintf("Delete the file %q from the %s folder. Leave the other files alone.", victimN, place),
				fmt.Sprintf("Remove %s but keep everything else in that folder.", victim)})
			return draft{abilities: []string{"navigate", "select", "delete"}, instruction: ins,
				vague:    fmt.Sprintf("Delete the file you no longer need from the %s folder.", place),
				setup:    []simdesk.SetupStep{sCreate(victim, fileText(r, ts[0])), sCreate(keep, fileText(r, ts[1]))},
				criteria: []judge.Criterion{cMissing(victim), cExists(keep)}, conveys: []string{victimN}, inputs: []int{0}}
		}},
		{"files.move", func(r *rand.Rand) draft {
			topic := pickOne(r, vTopics)
			name := topic + ".txt"
			src := "~/Downloads/" + name
			text := fileText(r, topic)
			setup := []simdesk.SetupStep{sCreate(src, text)}
			var dstDir, where, folder string
			if r.IntN(2) == 0 {
				folder = pickOne(r, vFolders)
				dstDir, where = "~/Documents/"+folder, "the "+folder+" folder inside Documents"
				setup = append(setup, sFolder(dstDir))
			} else {
				folder = pickOne(r, []string{"Desktop", "Documents", "Pictures"})
				dstDir, where = "~/"+folder, "the "+folder+" folder"
			}
			dst := dstDir + "/" + name
			ins := pickOne(r, []string{
				fmt.Sprintf("Move %q from Downloads into %s.", name, where),
				fmt.Sprintf("Drag %q out of Downloads and drop it into %s.", name, where)})
			return draft{abilities: []string{"navigate", "select", "move", "drag"}, instruction: ins,
				vague:    fmt.Sprintf("Move %q from Downloads to a better place.", name),
				setup:    setup,
				criteria: []judge.Criterion{cExists(dst), cMissing(src), cContent(dst, text, false)},
				conveys:  []string{name, folder}, inputs: []int{0}}
		}},
		{"files.copy", func(r *rand.Rand) draft {
			topic := pickOne(r, vTopics)
			name := topic + "-report.txt"
			src := "~/Documents/" + name
			text := fileText(r, topic)
			setup := []simdesk.SetupStep{sCreate(src, text)}
			folder := pickOne(r, []string{"Desktop", "Pictures", "Downloads"})
			dst := "~/" + folder + "/" + name
			ins := pickOne(r, []string{
				fmt.Sprintf("Copy %q from Documents into the %s folder, keeping the original where it is.", name, folder),
				fmt.Sprintf("Put a copy of %s in ~/%s; the original must stay.", src, folder)})
			return draft{abilities: []string{"navigate", "select", "copy", "paste"}, instruction: ins,
				vague:    fmt.Sprintf("Copy %q from Documents somewhere else.", name),
				setup:    setup,
				criteria: []judge.Criterion{cContent(dst, text, false), cContent(src, text, false)},
				conveys:  []string{name, folder}, inputs: []int{0}}
		}},
	}
}

// Editor.

func editorOps() []op {
	return []op{
		{"editor.write", func(r *rand.Rand) draft {
			topic := pickOne(r, vTopics)
			p := pickOne(r, []string{"~/Documents/" + topic + "-memo.txt", "~/Desktop/" + topic + "-note.txt"})
			ss := pickN(r, vSentences, 2)
			text := ss[0]
			if r.IntN(3) == 0 {
				text += "\n" + ss[1]
			}
			ins := pickOne(r, []string{
				fmt.Sprintf("Use the text editor to create %s containing exactly this text:\n%s", p, text),
				fmt.Sprintf("Write a new text file %s whose only content is:\n%s", p, text)})
			return draft{abilities: []string{"type", "save_as"}, instruction: ins,
				vague:    fmt.Sprintf("Use the text editor to create %s with a short note about the %s.", p, topic),
				criteria: []judge.Criterion{cContent(p, text, true)}, conveys: []string{base(p), text},
				achieve: []simdesk.SetupStep{sCreate(p, text)}}
		}},
		{"editor.append", func(r *rand.Rand) draft {
			topic := pickOne(r, vTopics)
			p := "~/Documents/" + topic + "-todo.txt"
			doc := listDoc(r, 3)
			line := "4. " + pickOne(r, vSentences)
			for strings.Contains(doc, line[3:]) {
				line = "4. " + pickOne(r, vSentences)
			}
			ins := pickOne(r, []string{
				fmt.Sprintf("Open %s in the text editor, add the line %q at the end of the list, and save the file.", p, line),
				fmt.Sprintf("Append %q as a new last line of %s and save it.", line, p)})
			return draft{abilities: []string{"open", "type", "save"}, instruction: ins,
				vague:    fmt.Sprintf("Open %s in the text editor, add another item at the end of the list, and save the file.", p),
				setup:    []simdesk.SetupStep{sCreate(p, doc)},
				criteria: []judge.Criterion{cContent(p, doc+line, true)}, conveys: []string{line}, inputs: []int{0}}
		}},
		{"editor.replace", func(r *rand.Rand) draft {
			topic := pickOne(r, vTopics)
			p := "~/Documents/" + topic + ".txt"
			pairs := [][2]string{{"draft", "final"}, {"Tuesday", "Thursday"}, {"team", "crew"}, {"Friday", "Monday"}, {"noon", "1pm"},
				{"client", "customer"}, {"plan", "schedule"}, {"review", "audit"}}
			pr := pickOne(r, pairs)
			old, nw := pr[0], pr[1]
			doc := fmt.Sprintf("Status: %s\nThe %s review is on %s.\nNotify the %s before %s.\n", old, old, old, old, old)
			if r.IntN(2) == 1 {
				doc = fmt.Sprintf("Owner: %s\nThe %s is due soon.\nKeep the %s short.\n", pickOne(r, vPeople), old, old)
			}
			want := strings.ReplaceAll(doc, old, nw)
			ins := pickOne(r, []string{
				fmt.Sprintf("In the open document, replace every occurrence of %q with %q, then save it.", old, nw),
				fmt.Sprintf("Change every %q in the open document %s to %q and save.", old, base(p), nw)})
			return draft{abilities: []string{"edit", "find_replace", "save"}, instruction: ins,
				vague: fmt.Sprintf("In the open document, replace every occurrence of %q with a better word, then save it.", old),
				setup: []simdesk.SetupStep{sCreate(p, doc), sOpen(p)},
				criteria: []judge.Criterion{cContent(p, want, false),
					cr("check_include_exclude", gFile("file_content", p), &judge.Getter{Type: "rule", Rules: &judge.Rules{Include: []string{nw}, Exclude: []string{old}}}, judge.Options{})},
				conveys: []string{old, nw}}
		}},
		{"editor.fixline", func(r *rand.Rand) draft {
			topic := pickOne(r, vTopics)
			p := "~/Desktop/" + topic + "-plan.txt"
			doc := listDoc(r, 5)
			n := 2 + r.IntN(3)
			lines := strings.Split(doc, "\n")
			newLine := fmt.Sprintf("%d. %s", n, pickOne(r, vSentences))
			for strings.Contains(doc, newLine[3:]) {
				newLine = fmt.Sprintf("%d. %s", n, pickOne(r, vSentences))
			}
			lines[n-1] = newLine
			ins := fmt.Sprintf("Edit %s: change line %d to read %q and save the file.", p, n, newLine)
			return draft{abilities: []string{"open", "navigate_text", "edit", "save"}, instruction: ins,
				vague:    fmt.Sprintf("Edit %s: fix line %d so it reads better and save the file.", p, n),
				setup:    []simdesk.SetupStep{sCreate(p, doc)},
				criteria: []judge.Criterion{cContent(p, strings.Join(lines, "\n"), false)}, conveys: []string{newLine}, inputs: []int{0}}
		}},
		{"editor.save", func(r *rand.Rand) draft {
			topic := pickOne(r, vTopics)
			p := "~/Documents/" + topic + "-log.txt"
			doc := listDoc(r, 2)
			added := pickOne(r, vSentences)
			ins := pickOne(r, []string{
				fmt.Sprintf("The open document %s has unsaved changes. Save them.", base(p)),
				fmt.Sprintf("Save the unsaved edits in %s without changing anything else.", p)})
			return draft{abilities: []string{"save"}, instruction: ins,
				setup:    []simdesk.SetupStep{sCreate(p, doc), sOpen(p), simdesk.Step("type_text", map[string]string{"text": added + "\n"})},
				criteria: []judge.Criterion{cr("is_false", &judge.Getter{Type: "editor_dirty"}, nil, judge.Options{}), cContent(p, added+"\n"+doc, false)},
				conveys:  []string{base(p)}}
		}},
		{"editor.saveas", func(r *rand.Rand) draft {
			topic := pickOne(r, vTopics)
			src := "~/Documents/" + topic + ".txt"
			dst := pickOne(r, []string{"~/Desktop/" + topic + "-backup.txt", "~/Documents/" + topic + "-copy.txt"})
			doc := listDoc(r, 3)
			ins := pickOne(r, []string{
				fmt.Sprintf("Save a copy of the open document as %s. The original must stay where it is.", dst),
				fmt.Sprintf("Use Save As to write the open document to %s, leaving %s unchanged.", dst, src)})
			return draft{abilities: []string{"save_as"}, instruction: ins,
				vague:    "Save a copy of the open document under a new name.",
				setup:    []simdesk.SetupStep{sCreate(src, doc), sOpen(src)},
				criteria: []judge.Criterion{cContent(dst, doc, false), cContent(src, doc, false)}, conveys: []string{base(dst)}}
		}},
	}
}

// Sheet.

// salesTable is a header plus n rows of (Item, Amount, Units) with
// distinct items.
func salesTable(r *rand.Rand, n int) [][]string {
	t := [][]string{{"Item", "Amount", "Units"}}
	for _, it := range pickN(r, vItems, n) {
		t = append(t, []string{it, strconv.Itoa(10 + r.IntN(90)), strconv.Itoa(1 + r.IntN(20))})
	}
	return t
}

func tableCSV(t [][]string) string { return (&sheet.Sheet{Cells: t}).CSV() }

func tableRule(t [][]string) *judge.Getter {
	rows := make([]any, len(t))
	for i, row := range t {
		cells := make([]any, len(row))
		for j, c := range row {
			cells[j] = c
		}
		rows[i] = cells
	}
	return gRule(rows)
}

func column(t [][]string, c int) []float64 {
	var out []float64
	for _, row := range t[1:] {
		n, _ := strconv.ParseFloat(row[c], 64)
		out = append(out, n)
	}
	return out
}

func aggregate(fn string, v []float64) float64 {
	switch fn {
	case "SUM", "AVERAGE":
		t := 0.0
		for _, x := range v {
			t += x
		}
		if fn == "AVERAGE" {
			return t / float64(len(v))
		}
		return t
	case "MIN":
		return slices.Min(v)
	case "COUNT":
		return float64(len(v))
	}
	return slices.Max(v)
}

func cCell(typ, p, cell string) *judge.Getter { return &judge.Getter{Type: typ, Path: p, Cell: cell} }

func sheetOps() []op {
	exactNum := judge.Options{Tolerance: 1e-6}
	formula := judge.Options{IgnoreCase: true, Strip: true}
	words := map[string]string{"SUM": "sum", "AVERAGE": "average", "MIN": "minimum", "MAX": "maximum", "COUNT": "count of values"}
	return []op{
		{"sheet.formula", func(r *rand.Rand) draft {
			fn := pickOne(r, []string{"SUM", "AVERAGE", "MIN", "MAX", "COUNT"})
			n := 3 + r.IntN(5)
			t := salesTable(r, n)
			col := 1 + r.IntN(2)
			letter := sheet.ColName(col)
			p := fmt.Sprintf("~/Documents/%s-%s.csv", strings.ToLower(pickOne(r, vCities)), pickOne(r, []string{"sales", "orders", "stock"}))
			cell := letter + strconv.Itoa(n+2)
			rng := fmt.Sprintf("%s2:%s%d", letter, letter, n+1)
			f := fmt.Sprintf("=%s(%s)", fn, rng)
			ins := pickOne(r, []string{
				fmt.Sprintf("Open %s and, in cell %s, enter a formula that computes the %s of the %s column (%s). Save the file.", p, cell, words[fn], t[0][col], rng),
				fmt.Sprintf("In %s, put the formula %s into cell %s and save the sheet.", p, f, cell)})
			return draft{abilities: []string{"open", "select_cell", "formula", "save"}, instruction: ins,
				vague: fmt.Sprintf("Open %s and add a formula that summarises the %s column somewhere below it. Save the file.", p, t[0][col]),
				setup: []simdesk.SetupStep{sCreate(p, tableCSV(t))},
				criteria: []judge.Criterion{
					cr("compare_number", cCell("sheet_cell", p, cell), gRule(aggregate(fn, column(t, col))), exactNum),
					cr("exact_match", cCell("sheet_cell_raw", p, cell), gRule(f), formula)},
				conveys: []string{cell, rng}, inputs: []int{0}}
		}},
		{"sheet.sort", func(r *rand.Rand) draft {
			t := salesTable(r, 4+r.IntN(3))
			col := r.IntN(3)
			desc := r.IntN(2) == 1
			p := fmt.Sprintf("~/Documents/%s-stock.csv", strings.ToLower(pickOne(r, vCities)))
			sorted := func(desc bool) [][]string {
				s := (&sheet.Sheet{Cells: t}).Clone()
				s.SortRows(col, 1, desc)
				return s.Cells
			}
			want := sorted(desc)
			if slices.EqualFunc(want, t, slices.Equal) {
				desc = !desc
				want = sorted(desc)
			}
			order := map[bool]string{false: "ascending", true: "descending"}[desc]
			ins := pickOne(r, []string{
				fmt.Sprintf("Sort the rows of %s by the %s column in %s order, keeping the header row on top, and save the file.", p, t[0][col], order),
				fmt.Sprintf("Open %s, sort the data rows by %s (%s) below the header, and save.", p, t[0][col], order)})
			return draft{abilities: []string{"open", "select_column", "sort", "save"}, instruction: ins,
				vague:    fmt.Sprintf("Sort the rows of %s in a sensible order and save the file.", p),
				setup:    []simdesk.SetupStep{sCreate(p, tableCSV(t))},
				criteria: []judge.Criterion{cr("compare_table", gFile("sheet_table", p), tableRule(want), judge.Options{})},
				conveys:  []string{t[0][col], order}, inputs: []int{0}}
		}},
		{"sheet.enter", func(r *rand.Rand) draft {
			shapes := []struct {
				head []string
				gen  func(k int) []string
			}{
				{[]string{"City", "Visitors", "Rating"}, func(k int) []string {
					return []string{vCities[k], strconv.Itoa(100 + r.IntN(900)), strconv.Itoa(1 + r.IntN(5))}
				}},
				{[]string{"Product", "Price", "Stock"}, func(k int) []string {
					return []string{vItems[k], strconv.Itoa(2 + r.IntN(40)), strconv.Itoa(r.IntN(60))}
				}},
				{[]string{"Name", "Team", "Score"}, func(k int) []string {
					return []string{strings.Fields(vPeople[k])[0], pickOne(r, []string{"Red", "Blue", "Green"}), strconv.Itoa(50 + r.IntN(50))}
				}},
			}
			sh := pickOne(r, shapes)
			width := 2 + r.IntN(2)
			t := [][]string{sh.head[:width]}
			start := r.IntN(8)
			for k := 0; k < 2+r.IntN(3); k++ {
				t = append(t, sh.gen(start + k)[:width])
			}
			p := fmt.Sprintf("~/Documents/%s-%d.csv", strings.ToLower(sh.head[0]), 1+r.IntN(99))
			var lines []string
			for _, row := range t {
				lines = append(lines, strings.Join(row, " | "))
			}
			ins := fmt.Sprintf("Create a new sheet with the following table (first row is the header, starting at A1) and save it as %s:\n%s", p, strings.Join(lines, "\n"))
			return draft{abilities: []string{"type", "navigate_cells", "save_as"}, instruction: ins,
				vague:    fmt.Sprintf("Create a new sheet with a small table about %ss and save it as %s.", strings.ToLower(sh.head[0]), p),
				criteria: []judge.Criterion{cr("compare_table", gFile("sheet_table", p), tableRule(t), judge.Options{})},
				conveys:  []string{base(p), t[1][0]}, achieve: []simdesk.SetupStep{sCreate(p, tableCSV(t))}}
		}},
		{"sheet.edit", func(r *rand.Rand) draft {
			t := salesTable(r, 5)
			row, col := 1+r.IntN(5), 1+r.IntN(2)
			v := 200 + r.IntN(300)
			p := fmt.Sprintf("~/Desktop/%s-orders.csv", strings.ToLower(pickOne(r, vCities)))
			cell := sheet.RefName(row, col)
			ins := pickOne(r, []string{
				fmt.Sprintf("In %s, change the %s of %s to %d and save the file.", p, t[0][col], t[row][0], v),
				fmt.Sprintf("Open %s and set %s's %s to %d, then save.", p, t[row][0], t[0][col], v)})
			return draft{abilities: []string{"open", "select_cell", "type", "save"}, instruction: ins,
				vague:    fmt.Sprintf("In %s, correct the %s of %s and save the file.", p, t[0][col], t[row][0]),
				setup:    []simdesk.SetupStep{sCreate(p, tableCSV(t))},
				criteria: []judge.Criterion{cr("compare_number", cCell("sheet_cell", p, cell), gRule(float64(v)), exactNum)},
				conveys:  []string{strconv.Itoa(v), t[row][0]}, inputs: []int{0}}
		}},
		{"sheet.totals", func(r *rand.Rand) draft {
			n := 3 + r.IntN(3)
			t := salesTable(r, n)
			p := fmt.Sprintf("~/Documents/%s-budget.csv", strings.ToLower(pickOne(r, vCities)))
			row := strconv.Itoa(n + 2)
			ins := fmt.Sprintf("Open %s and add a totals row below the data: put the word Total in A%s and SUM formulas for the Amount and Units columns in B%s and C%s. Save the file.", p, row, row, row)
			return draft{abilities: []string{"open", "formula", "type", "multi_step", "save"}, instruction: ins,
				setup: []simdesk.SetupStep{sCreate(p, tableCSV(t))},
				criteria: []judge.Criterion{
					cr("exact_match", cCell("sheet_cell", p, "A"+row), gRule("Total"), judge.Options{}),
					cr("exact_match", cCell("sheet_cell_raw", p, "B"+row), gRule(fmt.Sprintf("=SUM(B2:B%d)", n+1)), formula),
					cr("exact_match", cCell("sheet_cell_raw", p, "C"+row), gRule(fmt.Sprintf("=SUM(C2:C%d)", n+1)), formula),
					cr("compare_number", cCell("sheet_cell", p, "B"+row), gRule(aggregate("SUM", column(t, 1))), exactNum)},
				conveys: []string{"A" + row, "B" + row, "C" + row}, inputs: []int{0}}
		}},
	}
}

// Settings.

func settingsOfKind(kind string) []*simdesk.SettingDef {
	var out []*simdesk.SettingDef
	for _, p := range simdesk.Pages {
		for _, s := range p.Settings {
			if s.Kind == kind {
				out = append(out, s)
			}
		}
	}
	return out
}

func pageTitle(key string) string {
	id, _, _ := strings.Cut(key, ".")
	for _, p := range simdesk.Pages {
		if p.ID == id {
			return p.Title
		}
	}
	return id
}

// settingCrit judges one setting by its kind, as the built-in pool does.
func settingCrit(key, value string) judge.Criterion {
	g := &judge.Getter{Type: "setting", Key: key}
	def := simdesk.SettingByKey(key)
	switch def.Kind {
	case simdesk.KindToggle:
		if value == "true" {
			return cr("is_true", g, nil, judge.Options{})
		}
		return cr("is_false", g, nil, judge.Options{})
	case simdesk.KindSlider:
		n, _ := strconv.ParseFloat(value, 64)
		return cr("compare_number", g, gRule(n), judge.Options{Tolerance: 1})
	}
	return cr("exact_match", g, gRule(value), judge.Options{})
}

// settingValue draws a value that differs from the default.
func settingValue(r *rand.Rand, def *simdesk.SettingDef) string {
	switch def.Kind {
	case simdesk.KindToggle:
		if def.Default == "true" {
			return "false"
		}
		return "true"
	case simdesk.KindChoice:
		for {
			if o := pickOne(r, def.Options); o != def.Default {
				return o
			}
		}
	case simdesk.KindSlider:
		d, _ := strconv.Atoi(def.Default)
		for {
			if n := 5 + r.IntN(91); n-d > 3 || d-n > 3 {
				return strconv.Itoa(n)
			}
		}
	}
	switch def.Key {
	case "general.device_name":
		return pickOne(r, []string{"office", "lab", "studio", "desk", "kiosk"}) + "-" + strconv.Itoa(1+r.IntN(99))
	case "network.dns":
		return fmt.Sprintf("%d.%d.%d.%d", 8+r.IntN(2), r.IntN(10), r.IntN(10), 1+r.IntN(9))
	case "network.proxy_host":
		return fmt.Sprintf("proxy%d.%s.example.com", 1+r.IntN(9), pickOne(r, []string{"corp", "lab", "office"}))
	case "network.proxy_port":
		return strconv.Itoa(pickOne(r, []int{3128, 8080, 8888, 9090, 3129}))
	}
	return "value-" + strconv.Itoa(r.IntN(100))
}

// spoken renders a setting value for an instruction.
func spoken(def *simdesk.SettingDef, v string) string {
	switch {
	case def.Kind == simdesk.KindToggle && v == "true":
		return "on"
	case def.Kind == simdesk.KindToggle:
		return "off"
	case def.Kind == simdesk.KindSlider:
		return v + "%"
	}
	return v
}

func settingsOps() []op {
	return []op{
		{"settings.toggle", func(r *rand.Rand) draft {
			def := pickOne(r, settingsOfKind(simdesk.KindToggle))
			want := settingValue(r, def)
			verb := map[string]string{"true": "Turn on", "false": "Turn off"}[want]
			ins := pickOne(r, []string{
				fmt.Sprintf("%s %q in the %s settings.", verb, def.Label, pageTitle(def.Key)),
				fmt.Sprintf("Open Settings, go to %s and switch %q %s.", pageTitle(def.Key), def.Label, spoken(def, want))})
			return draft{abilities: []string{"navigate_pages", "scroll", "toggle"}, instruction: ins,
				vague:    fmt.Sprintf("Change the %q switch in the %s settings.", def.Label, pageTitle(def.Key)),
				criteria: []judge.Criterion{settingCrit(def.Key, want)}, conveys: []string{def.Label},
				achieve: []simdesk.SetupStep{sSetting(def.Key, want)}}
		}},
		{"settings.choice", func(r *rand.Rand) draft {
			def := pickOne(r, settingsOfKind(simdesk.KindChoice))
			opt := settingValue(r, def)
			ins := pickOne(r, []string{
				fmt.Sprintf("In Settings > %s, set %q to %s.", pageTitle(def.Key), def.Label, opt),
				fmt.Sprintf("Change %q on the %s settings page to %s.", def.Label, pageTitle(def.Key), opt)})
			return draft{abilities: []string{"navigate_pages", "dropdown"}, instruction: ins,
				vague:    fmt.Sprintf("In Settings > %s, set %q to a different option.", pageTitle(def.Key), def.Label),
				criteria: []judge.Criterion{settingCrit(def.Key, opt)}, conveys: []string{def.Label, opt},
				achieve: []simdesk.SetupStep{sSetting(def.Key, opt)}}
		}},
		{"settings.text", func(r *rand.Rand) draft {
			def := pickOne(r, settingsOfKind(simdesk.KindText))
			v := settingValue(r, def)
			ins := pickOne(r, []string{
				fmt.Sprintf("Set %q in the %s settings to %s.", def.Label, pageTitle(def.Key), v),
				fmt.Sprintf("Type %s into the %q field of the %s settings.", v, def.Label, pageTitle(def.Key))})
			return draft{abilities: []string{"navigate_pages", "text_field"}, instruction: ins,
				vague:    fmt.Sprintf("Set %q in the %s settings to whatever the office uses.", def.Label, pageTitle(def.Key)),
				criteria: []judge.Criterion{settingCrit(def.Key, v)}, conveys: []string{def.Label, v},
				achieve: []simdesk.SetupStep{sSetting(def.Key, v)}}
		}},
		{"settings.slider", func(r *rand.Rand) draft {
			def := pickOne(r, settingsOfKind(simdesk.KindSlider))
			v := settingValue(r, def)
			ins := pickOne(r, []string{
				fmt.Sprintf("Set %q (%s settings) to %s%%.", def.Label, pageTitle(def.Key), v),
				fmt.Sprintf("Move the %q slider in the %s settings to %s%%.", def.Label, pageTitle(def.Key), v)})
			return draft{abilities: []string{"navigate_pages", "slider"}, instruction: ins,
				vague:    fmt.Sprintf("Adjust %q in the %s settings to a comfortable level.", def.Label, pageTitle(def.Key)),
				criteria: []judge.Criterion{settingCrit(def.Key, v)}, conveys: []string{def.Label, v},
				achieve: []simdesk.SetupStep{sSetting(def.Key, v)}}
		}},
		{"settings.multi", func(r *rand.Rand) draft {
			var all []*simdesk.SettingDef
			for _, p := range simdesk.Pages {
				all = append(all, p.Settings...)
			}
			defs := pickN(r, all, 2+r.IntN(3))
			var parts, conveys []string
			var crits []judge.Criterion
			for _, def := range defs {
				v := settingValue(r, def)
				parts = append(parts, fmt.Sprintf("%s %s to %s", pageTitle(def.Key), strings.ToLower(def.Label), spoken(def, v)))
				crits = append(crits, settingCrit(def.Key, v))
				conveys = append(conveys, strings.ToLower(def.Label))
				if def.Kind != simdesk.KindToggle {
					conveys = append(conveys, v)
				}
			}
			return draft{abilities: []string{"navigate_pages", "scroll", "toggle", "dropdown", "text_field", "multi_step"},
				instruction: "Change these settings: " + strings.Join(parts, "; ") + ".",
				vague:       "Change a few settings so the computer suits a new employee.",
				criteria:    crits, conveys: conveys}
		}},
	}
}

// Mail.

func mailOps() []op {
	strip := judge.Options{Strip: true}
	return []op{
		{"mail.send", func(r *rand.Rand) draft {
			to := emailOf(pickOne(r, vPeople))
			subject := fmt.Sprintf("%s update", titleCase(pickOne(r, vTopics)))
			body := pickOne(r, vSentences)
			ins := pickOne(r, []string{
				fmt.Sprintf("Send an email to %s with the subject %q and the body %q.", to, subject, body),
				fmt.Sprintf("Write to %s: subject %q, message %q. Send it.", to, subject, body)})
			return draft{abilities: []string{"compose", "type", "send"}, instruction: ins,
				vague:    fmt.Sprintf("Send an email to %s with a suitable subject and a short message.", to),
				criteria: []judge.Criterion{cMail("to", to, judge.Options{}), cMail("subject", subject, judge.Options{}), cMail("body", body, strip)},
				conveys:  []string{to, subject, body}}
		}},
		{"mail.reply", func(r *rand.Rand) draft {
			from := pickOne(r, vPeople)
			addr := emailOf(from)
			topic := pickOne(r, vTopics)
			subject := fmt.Sprintf("Question about the %s", topic)
			answer := pickOne(r, []string{"Yes, that works for me.", "I will send it tomorrow.", "Let us discuss on Monday.", "Thanks, approved.",
				"Please go ahead.", "I need one more day.", "Count me in."})
			ins := pickOne(r, []string{
				fmt.Sprintf("Reply to the email from %s about %q with the text %q.", from, subject, answer),
				fmt.Sprintf("Answer %s's message %q with %q.", from, subject, answer)})
			return draft{abilities: []string{"read", "reply", "type", "send"}, instruction: ins,
				vague: fmt.Sprintf("Reply to the email from %s about %q with an appropriate answer.", from, subject),
				setup: []simdesk.SetupStep{sApp("mail"), simdesk.Step("add_mail", map[string]string{"from": addr, "subject": subject,
					"body": fmt.Sprintf("Hi,\ncould you confirm the %s plan?\n%s", topic, from)})},
				criteria: []judge.Criterion{cMail("to", addr, judge.Options{}), cMail("subject", "Re: "+subject, judge.Options{}),
					cr("check_include_exclude", &judge.Getter{Type: "sent_mail", Field: "body"}, &judge.Getter{Type: "rule", Rules: &judge.Rules{Include: []string{answer}}}, judge.Options{})},
				conveys: []string{answer}}
		}},
		{"mail.attach", func(r *rand.Rand) draft {
			to := emailOf(pickOne(r, vPeople))
			topic := pickOne(r, vTopics)
			p := "~/Documents/" + topic + "-summary.txt"
			subject := topic + " summary"
			ins := pickOne(r, []string{
				fmt.Sprintf("Email the file %s to %s as an attachment, with the subject %q.", p, to, subject),
				fmt.Sprintf("Send %s the attachment %s; use the subject %q.", to, p, subject)})
			return draft{abilities: []string{"compose", "attach", "send"}, instruction: ins,
				vague: fmt.Sprintf("Email one of the summaries in Documents to %s.", to),
				setup: []simdesk.SetupStep{sCreate(p, fileText(r, topic))},
				criteria: []judge.Criterion{cMail("to", to, judge.Options{}), cMail("subject", subject, judge.Options{}),
					cr("compare_list", &judge.Getter{Type: "sent_mail", Field: "attachments"}, gRule([]any{absPath(p)}), judge.Options{})},
				conveys: []string{to, base(p), subject}, inputs: []int{0}}
		}},
		{"mail.cc", func(r *rand.Rand) draft {
			ps := pickN(r, vPeople, 2)
			to, cc := emailOf(ps[0]), emailOf(ps[1])
			subject := fmt.Sprintf("%s kickoff", titleCase(pickOne(r, vTopics)))
			ss := pickN(r, vSentences, 2)
			body := ss[0] + "\n" + ss[1]
			ins := fmt.Sprintf("Write an email to %s, with %s in Cc, subject %q, and this body:\n%s\nThen send it.", to, cc, subject, body)
			return draft{abilities: []string{"compose", "type", "send"}, instruction: ins,
				vague: fmt.Sprintf("Write an email to %s, copying a colleague, about the kickoff, and send it.", to),
				criteria: []judge.Criterion{cMail("to", to, judge.Options{}), cMail("cc", cc, judge.Options{}),
					cMail("subject", subject, judge.Options{}), cMail("body", body, strip)},
				conveys: []string{to, cc, subject}}
		}},
	}
}
