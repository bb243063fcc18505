package synthesize

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
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

// Capabilities lists the capability ids the document names in back-quotes
// ("files.rename"), in order of appearance; the builtin proposer writes
// tasks for these only.
func (d Doc) Capabilities() []string {
	var out []string
	for _, m := range capRe.FindAllStringSubmatch(d.Text, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

var capRe = regexp.MustCompile("`([a-z]+\\.[a-z_]+)`")

//go:embed knowledge/*.md
var knowledgeFS embed.FS

// SimdeskDocs returns the simulator's knowledge documents, one per app: the
// prose and capability list of each app, followed by a reference generated
// from the simulator itself (setup step types, judge getters and metrics,
// the settings catalogue, formula functions), so the reference never drifts
// from what the rule validator accepts.
//
// The simulator package has no knowledge accessor yet; these documents live
// here until it does.
func SimdeskDocs() ([]Doc, error) {
	var docs []Doc
	for _, app := range simdesk.Apps() {
		b, err := knowledgeFS.ReadFile("knowledge/" + app + ".md")
		if err != nil {
			return nil, fmt.Errorf("synthesize: knowledge document for %s: %w", app, err)
		}
		d := parseDoc("simdesk:knowledge/"+app+".md", app+".md", string(b))
		d.Text = strings.TrimRight(d.Text, "\n") + "\n\n" + simdeskReference(app)
		docs = append(docs, d)
	}
	return docs, nil
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

// simdeskReference is the generated part of a simulator document.
func simdeskReference(app string) string {
	var b strings.Builder
	b.WriteString("## Reference (generated from the simulator)\n\n")
	b.WriteString("Paths: `~` is /home/user; the home folder starts with Desktop, Documents, Downloads and Pictures.\n\n")
	b.WriteString("### Setup step types\n\nA setup is a JSON list of `{\"type\": ..., \"parameters\": {...}}`. Declarative types only:\n\n")
	for _, st := range simdesk.SetupTypes() {
		if !allowedSetup[st[0]] {
			continue
		}
		fmt.Fprintf(&b, "- `%s`: %s\n", st[0], st[1])
	}
	b.WriteString("\n### Judge getters\n\n")
	for _, g := range strings.Split(judge.GetterNames(), ", ") {
		fmt.Fprintf(&b, "- %s\n", judge.GetterDoc(g))
	}
	b.WriteString("\n### Judge metrics\n\n")
	for _, m := range strings.Split(judge.MetricNames(), ", ") {
		fmt.Fprintf(&b, "- `%s`: %s\n", m, judge.MetricDoc(m))
	}
	b.WriteString("\nA judge is `{\"func\": metric, \"result\": getter, \"expected\": {\"type\": \"rule\", \"rules\": {\"expected\": value}}, \"options\": {...}}`, " +
		"or lists of each with `\"conj\": \"and\"`.\n")
	switch app {
	case "settings":
		b.WriteString("\n### Settings catalogue (key: label, kind, default, options)\n\n")
		for _, p := range simdesk.Pages {
			fmt.Fprintf(&b, "%s page:\n", p.Title)
			for _, s := range p.Settings {
				opts := ""
				if len(s.Options) > 0 {
					opts = " [" + strings.Join(s.Options, ", ") + "]"
				}
				fmt.Fprintf(&b, "- `%s`: %q, %s, default %q%s\n", s.Key, s.Label, s.Kind, s.Default, opts)
			}
		}
	case "sheet":
		fmt.Fprintf(&b, "\nFormula functions: %s.\n", strings.Join(sheet.Functions, ", "))
	}
	return b.String()
}
