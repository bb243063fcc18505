package simdesk

import (
	"embed"
	"fmt"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
)

//go:embed knowledge/*.md
var knowledgeFS embed.FS

// Knowledge returns the knowledge document of an app (Markdown): what the
// app can do, its menus and shortcuts, and how tasks on it are judged,
// followed by generated reference sections (the settings catalogue for
// settings, and for every app the judge getters, metrics and setup steps).
// The synthesize stage's proposer reads it.
func Knowledge(app string) (string, error) {
	b, err := knowledgeFS.ReadFile("knowledge/" + app + ".md")
	if err != nil {
		return "", fmt.Errorf("simdesk: no knowledge document for app %q (apps: %s)", app, strings.Join(Apps(), ", "))
	}
	var s strings.Builder
	s.Write(b)
	if app == "settings" {
		s.WriteString("\n## Settings catalogue\n\n| key | page | label | kind | values | default |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, p := range Pages {
			for _, d := range p.Settings {
				values := map[string]string{KindToggle: "on/off (true/false)", KindSlider: "0-100", KindText: "text"}[d.Kind]
				if d.Kind == KindChoice {
					values = strings.Join(d.Options, ", ")
				}
				if d.Numeric {
					values = "whole number 0-65535"
				}
				fmt.Fprintf(&s, "| `%s` | %s | %s | %s | %s | %s |\n", d.Key, p.Title, d.Label, d.Kind, values, d.Default)
			}
		}
	}
	s.WriteString(ReferenceMarkdown())
	return s.String(), nil
}

// ReferenceMarkdown lists, for knowledge documents and docs, the judge
// getters and metrics and the setup step types.
func ReferenceMarkdown() string {
	var s strings.Builder
	s.WriteString("\n## Judge getters\n\n")
	for _, g := range strings.Split(judge.GetterNames(), ", ") {
		fmt.Fprintf(&s, "- `%s`\n", judge.GetterDoc(g))
	}
	s.WriteString("\n## Judge metrics\n\n")
	for _, m := range strings.Split(judge.MetricNames(), ", ") {
		fmt.Fprintf(&s, "- `%s`: %s\n", m, judge.MetricDoc(m))
	}
	s.WriteString("\nOptions: `ignore_case`, `strip`, `tolerance`, `threshold`, `ignore_order`. " +
		"Several criteria: lists in `func`, `result`, `expected`, `options` with `conj` \"and\" (default) or \"or\". " +
		"An infeasible task's judge is `{\"func\": \"infeasible\"}`: it scores 1 only when the agent ends with `fail`; " +
		"any feasible task ended with `fail` scores 0.\n")
	s.WriteString("\n## Setup steps\n\n")
	for _, t := range SetupTypes() {
		fmt.Fprintf(&s, "- `%s`: %s\n", t[0], t[1])
	}
	fmt.Fprintf(&s, "\nSheet formula functions: %s.\n", strings.Join(sheet.Functions, ", "))
	return s.String()
}
