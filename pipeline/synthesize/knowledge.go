package synthesize

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
)

// Doc is one environment knowledge document: what a proposer writes tasks
// from.
type Doc struct {
	// Name identifies the document; it becomes the origin of the tasks
	// written from it ("simdesk:knowledge/files.md", "docs:osworld/gimp.md").
	Name string
	// App is the application the document describes (its front matter's
	// "app:", else the file name).
	App string
	// Text is the Markdown itself.
	Text string
}

// Capabilities lists the capability ids of the document's app it names in
// back-quotes ("files.rename" in a files document), in order of appearance;
// the builtin proposer writes tasks for these only (for every capability
// of the app when there are none).
func (d Doc) Capabilities() []string {
	var out []string
	for _, m := range capRe.FindAllStringSubmatch(d.Text, -1) {
		if strings.HasPrefix(m[1], d.App+".") && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

var capRe = regexp.MustCompile("`([a-z]+\\.[a-z_]+)`")

// SimdeskDocs returns the simulator's knowledge documents, one per app
// (simdesk.Knowledge: what the app can do, its menus, how its tasks are
// judged, and the generated reference of getters, metrics, setup steps and
// settings), each followed by the capabilities of the builtin proposer's
// grammar for that app, so the builtin proposer writes from the document
// like any other.
func SimdeskDocs() ([]Doc, error) {
	var docs []Doc
	for _, app := range simdesk.Apps() {
		text, err := simdesk.Knowledge(app)
		if err != nil {
			return nil, fmt.Errorf("synthesize: %w", err)
		}
		var caps strings.Builder
		caps.WriteString("\n## Task capabilities\n\nKinds of tasks to write for this app:\n\n")
		for _, c := range capabilityDocs {
			if strings.HasPrefix(c[0], app+".") {
				fmt.Fprintf(&caps, "- `%s`: %s\n", c[0], c[1])
			}
		}
		docs = append(docs, Doc{Name: "simdesk:knowledge/" + app + ".md", App: app, Text: strings.TrimRight(text, "\n") + "\n" + caps.String()})
	}
	return docs, nil
}

// capabilityDocs describes each capability of the builtin grammar.
var capabilityDocs = [][2]string{
	{"files.mkdir", "create a folder in one of the usual places"},
	{"files.mkdir_nested", "create a folder inside a new folder"},
	{"files.newfile", "create an empty file"},
	{"files.rename", "rename a file, keeping its content"},
	{"files.delete", "delete one file and leave its neighbours alone"},
	{"files.move", "move a file from Downloads into another folder"},
	{"files.copy", "copy a file into another folder, keeping the original"},
	{"editor.write", "create a new text file with given content"},
	{"editor.append", "open a file, add a line at the end, save"},
	{"editor.replace", "replace every occurrence of a word in the open document"},
	{"editor.fixline", "change one numbered line of a list and save"},
	{"editor.save", "save unsaved changes of the open document"},
	{"editor.saveas", "save a copy of the open document under another path"},
	{"sheet.formula", "enter an aggregate formula below a column and save"},
	{"sheet.sort", "sort the rows by one column and save"},
	{"sheet.enter", "type a small table into a new sheet and save it"},
	{"sheet.edit", "change one value of a table and save"},
	{"sheet.totals", "add a totals row with a label and SUM formulas"},
	{"settings.toggle", "turn one switch on or off"},
	{"settings.choice", "pick an option of a dropdown"},
	{"settings.text", "type a value into a text setting"},
	{"settings.slider", "set a slider to a percentage"},
	{"settings.multi", "change two to four settings on different pages"},
	{"mail.send", "send a message with a given recipient, subject and body"},
	{"mail.reply", "reply to an inbox message with a given text"},
	{"mail.attach", "send a file as an attachment"},
	{"mail.cc", "send a message with a Cc recipient"},
}

// LoadDocs reads every Markdown file under dir (sorted by path), for
// environments other than the built-in documents describe.
func LoadDocs(dir string) ([]Doc, error) {
	var docs []Doc
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || !strings.EqualFold(filepath.Ext(p), ".md") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			rel = filepath.Base(p)
		}
		docs = append(docs, parseDoc("docs:"+filepath.ToSlash(rel), filepath.Base(p), string(b)))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("synthesize: --docs %s: %w", dir, err)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("synthesize: --docs %s: no Markdown files", dir)
	}
	sort.Slice(docs, func(a, b int) bool { return docs[a].Name < docs[b].Name })
	return docs, nil
}

// parseDoc reads an optional front matter ("---\napp: x\n---") for the app.
func parseDoc(name, file, text string) Doc {
	d := Doc{Name: name, App: strings.TrimSuffix(strings.ToLower(file), ".md"), Text: text}
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		if fm, body, ok := strings.Cut(rest, "\n---\n"); ok {
			for _, line := range strings.Split(fm, "\n") {
				if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "app" {
					d.App = strings.TrimSpace(v)
				}
			}
			d.Text = strings.TrimLeft(body, "\n")
		}
	}
	return d
}
