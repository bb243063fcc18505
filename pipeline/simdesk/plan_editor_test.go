package simdesk

import (
	"strconv"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

func TestReplacePair(t *testing.T) {
	for _, c := range []struct {
		cur, target, old, nw string
		ok                   bool
	}{
		{"Status: draft\nThe draft is on draft.\n", "Status: final\nThe final is on final.\n", "draft", "final", true},
		{"Meet on Tuesday.", "Meet on Thursday.", "Tuesday", "Thursday", true},
		{"at noon, noon.", "at 1pm, 1pm.", "noon", "1pm", true},
		// Only the first of two occurrences changes: one replace-all
		// would change both.
		{"a draft and a draft", "a final and a draft", "", "", false},
		// A whole line rewritten is not one word replaced.
		{"1. a\n2. Call the supplier.\n", "1. a\n2. Water the plants.\n", "", "", false},
		{"same", "same", "", "", false},
		{"abc", "abc.", "", "", false}, // an insertion at a non-word
	} {
		old, nw, ok := replacePair(c.cur, c.target)
		if ok != c.ok || (ok && (old != c.old || nw != c.nw)) {
			t.Errorf("replacePair(%q, %q) = %q, %q, %v; want %q, %q, %v", c.cur, c.target, old, nw, ok, c.old, c.nw, c.ok)
		}
	}
}

// TestRewriteLine: a change confined to one line that loses some of its
// text is made by Go to Line, shift+End and typing the new line (or
// Delete, when the new line is empty); appends and multi-line changes are
// not line rewrites.
func TestRewriteLine(t *testing.T) {
	for _, c := range []struct {
		cur, target string
		n           int
		ok          bool
	}{
		{"1. a\n2. Call the supplier.\n", "1. a\n2. Water the plants.\n", 1, true},
		{"x\ny", "x\n", 1, true},
		{"x\ny", "x\ny and more", 0, false}, // an append
		{"x\ny", "x2\ny2", 0, false},        // two lines
		{"x\ny", "x\ny\nz", 0, false},       // a new line
	} {
		n, _, ok := changedLine(c.cur, c.target)
		if ok != c.ok || (ok && n != c.n) {
			t.Errorf("changedLine(%q, %q) = %d, %v; want %d, %v", c.cur, c.target, n, ok, c.n, c.ok)
		}
	}
	for _, target := range []string{"1. one\n2. Water the plants.\n3. three", "1. one\n\n3. three"} {
		u := setupUI(t, createFile("~/n.txt", "1. one\n2. Call the supplier.\n3. three"), openFile("~/n.txt"))
		var kinds []string
		for step := 0; u.d.S.Editor.Buf.Text() != target; step++ {
			if step == 8 {
				t.Fatalf("%q: not reached after %v, text %q", target, kinds, u.d.S.Editor.Buf.Text())
			}
			var a schemas.Action
			var err error
			if dl := u.d.S.Editor.Dialog; dl != nil && dl.Kind == "goto" {
				n, _, _ := changedLine(u.d.S.Editor.Buf.Text(), target)
				a = fillField(&dl.Field, strconv.Itoa(n+1), true)
			} else if a, err = editStep(u.d, target); err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, a.Kind+" "+strings.Join(a.Keys, "+"))
			if msg := u.d.Apply(a); msg != "" {
				t.Fatalf("%+v: %s", a, msg)
			}
		}
		if got := strings.Join(kinds, ", "); !strings.HasPrefix(got, "hotkey ctrl+g, type , hotkey shift+end, ") {
			t.Errorf("%q: actions %s", target, got)
		}
	}
}

// TestOracleUsesEditorDialogs: the oracle replaces every occurrence of a
// word through Find and Replace and saves a copy of an unchanged document
// through Save As, as the families' abilities say (find_replace, save_as),
// instead of retyping the document, which a policy could only copy
// literally.
func TestOracleUsesEditorDialogs(t *testing.T) {
	sim, err := NewSim(Options{TreeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"editor-replace": {"hotkey ctrl+h", "click", "hotkey ctrl+s"},
		"editor-saveas":  {"hotkey ctrl+shift+s"},
	}
	seen := map[string]int{}
	for _, task := range Pool() {
		fam := FamilyOf(task.TaskID)
		keys, ok := want[fam]
		if !ok {
			continue
		}
		obs, err := sim.Reset(task, 1)
		if err != nil {
			t.Fatal(err)
		}
		pol, err := Oracle(task)
		if err != nil {
			t.Fatal(err)
		}
		var trace []string
		for !obs.Done && obs.Step < 40 {
			a, err := pol.Next(obs)
			if err != nil {
				t.Fatalf("%s: %v", task.TaskID, err)
			}
			s := a.Kind
			if a.Kind == "hotkey" {
				s += " " + strings.Join(a.Keys, "+")
			}
			if a.Kind == "type" && strings.Contains(strings.TrimSuffix(a.Text, "\n"), "\n") {
				t.Fatalf("%s: the oracle retypes the document: %q", task.TaskID, a.Text)
			}
			trace = append(trace, s)
			if obs, err = sim.Step(a); err != nil {
				t.Fatal(err)
			}
		}
		if score, detail, err := sim.Evaluate(); err != nil || score != 1 {
			t.Fatalf("%s: score %v (%v): %s", task.TaskID, score, err, detail)
		}
		all := strings.Join(trace, " ; ")
		for _, k := range keys {
			if !strings.Contains(all, k) {
				t.Errorf("%s: %q not in the oracle's actions %s", task.TaskID, k, all)
			}
		}
		if strings.Contains(all, "hotkey ctrl+n") {
			t.Errorf("%s: the oracle starts a new document: %s", task.TaskID, all)
		}
		seen[fam]++
	}
	if seen["editor-replace"] == 0 || seen["editor-saveas"] == 0 {
		t.Fatalf("families not in the pool: %v", seen)
	}
}
