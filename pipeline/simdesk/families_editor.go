package simdesk

import (
	"fmt"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
)

var sentences = []string{
	"The meeting moved to Tuesday.", "Remember to back up the database.", "Lunch is at noon.",
	"Ship the release on Friday.", "Call the supplier about the delay.", "The printer on floor 2 is fixed.",
	"Budget review starts at 10am.", "Pack the demo laptop.", "Send the slides to the team.",
	"Water the office plants.", "Renew the domain name.", "Book the train tickets.",
}

// listDoc is a small multi-line document used by editor tasks.
func listDoc(i, lines int) string {
	var b strings.Builder
	for k := 0; k < lines; k++ {
		fmt.Fprintf(&b, "%d. %s\n", k+1, pick(sentences, i+k))
	}
	return b.String()
}

func editorFamilies() []family {
	strip := judge.Options{Strip: true}
	return []family{
		{id: "editor-write", app: "editor", abilities: []string{"type", "save_as"}, n: 12, gen: func(i int) taskSpec {
			topic := pick(topics, i+1)
			p := "~/Documents/" + topic + "-memo.txt"
			text := pick(sentences, i)
			if i%3 == 2 {
				text += "\n" + pick(sentences, i+4)
			}
			return taskSpec{param: topic,
				instruction: fmt.Sprintf("Use the text editor to create %s containing exactly this text:\n%s", p, text),
				criteria:    []judge.Criterion{critOpt("exact_match", fileGetter("file_content", p), rule(text), strip)}}
		}},
		{id: "editor-append", app: "editor", abilities: []string{"open", "type", "save"}, n: 10, gen: func(i int) taskSpec {
			topic := pick(topics, i+2)
			p := "~/Documents/" + topic + "-todo.txt"
			doc := listDoc(i, 3)
			line := fmt.Sprintf("4. %s", pick(sentences, i+7))
			return taskSpec{param: topic,
				instruction: fmt.Sprintf("Open %s in the text editor, add the line %q at the end of the list, and save the file.", p, line),
				setup:       []SetupStep{createFile(p, doc)},
				criteria:    []judge.Criterion{critOpt("exact_match", fileGetter("file_content", p), rule(doc+line), strip)}}
		}},
		{id: "editor-replace", app: "editor", abilities: []string{"edit", "find_replace", "save"}, n: 10, gen: func(i int) taskSpec {
			topic := pick(topics, i+4)
			p := "~/Documents/" + topic + ".txt"
			old, nw := pick([]string{"draft", "Tuesday", "team", "Friday", "noon"}, i), pick([]string{"final", "Thursday", "crew", "Monday", "1pm"}, i)
			doc := fmt.Sprintf("Status: %s\nThe %s review is on %s.\nNotify the %s before %s.\n", old, old, old, old, old)
			if i%2 == 1 {
				doc = listDoc(i, 3) + fmt.Sprintf("Note: %s\n", old)
			}
			want := strings.ReplaceAll(doc, old, nw)
			return taskSpec{param: topic + ":" + old,
				instruction: fmt.Sprintf("In the open document, replace every occurrence of %q with %q, then save it.", old, nw),
				setup:       []SetupStep{createFile(p, doc), openFile(p)},
				criteria: []judge.Criterion{content(p, want),
					crit("check_include_exclude", fileGetter("file_content", p), &judge.Getter{Type: "rule", Rules: &judge.Rules{Include: []string{nw}, Exclude: []string{old}}})}}
		}},
		{id: "editor-fixline", app: "editor", abilities: []string{"open", "navigate_text", "edit", "save"}, n: 8, gen: func(i int) taskSpec {
			topic := pick(topics, i+6)
			p := "~/Desktop/" + topic + "-plan.txt"
			doc := listDoc(i, 5)
			n := 2 + i%3
			lines := strings.Split(doc, "\n")
			newLine := fmt.Sprintf("%d. %s", n, pick(sentences, i+9))
			lines[n-1] = newLine
			return taskSpec{param: topic,
				instruction: fmt.Sprintf("Edit %s: change line %d to read %q and save the file.", p, n, newLine),
				setup:       []SetupStep{createFile(p, doc)},
				criteria:    []judge.Criterion{content(p, strings.Join(lines, "\n"))}}
		}},
		{id: "editor-save", app: "editor", abilities: []string{"save"}, n: 8, gen: func(i int) taskSpec {
			topic := pick(topics, i+8)
			p := "~/Documents/" + topic + "-log.txt"
			doc := listDoc(i, 2)
			added := pick(sentences, i+3)
			return taskSpec{param: topic,
				instruction: "The open document has unsaved changes. Save them.",
				setup:       []SetupStep{createFile(p, doc), openFile(p), Step("type_text", map[string]string{"text": added + "\n"})},
				criteria:    []judge.Criterion{crit("is_false", getter("editor_dirty"), nil), content(p, added+"\n"+doc)}}
		}},
		{id: "editor-saveas", app: "editor", abilities: []string{"save_as"}, n: 6, gen: func(i int) taskSpec {
			topic := pick(topics, i+10)
			src := "~/Documents/" + topic + ".txt"
			dst := "~/Desktop/" + topic + "-backup.txt"
			doc := listDoc(i+2, 3)
			return taskSpec{param: topic,
				instruction: fmt.Sprintf("Save a copy of the open document as %s. The original must stay where it is.", dst),
				setup:       []SetupStep{createFile(src, doc), openFile(src)},
				criteria:    []judge.Criterion{content(dst, doc), content(src, doc)}}
		}},
		{id: "editor-infeasible", app: "editor", abilities: []string{"infeasible"}, n: 4, gen: func(i int) taskSpec {
			p := "~/Documents/" + pick(topics, i) + ".txt"
			asks := []string{"Change the text editor's font to Comic Sans.", "Turn on spell checking in the text editor.",
				"Print " + p + " to the office printer.", "Export " + p + " from the text editor as a PDF file."}
			return taskSpec{param: asks[i%len(asks)], instruction: asks[i%len(asks)],
				setup: []SetupStep{createFile(p, listDoc(i, 2))}, infeasible: true}
		}},
	}
}
