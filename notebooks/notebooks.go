// Package notebooks ships cualake's analyst notebooks (Markdown with SQL
// cells, docs/notebooks.md) inside the binary, so `cualake notebook run
// frontier` works anywhere and the audit stage renders its reports from the
// same files analysts can read and re-run.
package notebooks

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.md
var files embed.FS

// Names lists the shipped notebooks by name (file name without .md), sorted.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			out = append(out, strings.TrimSuffix(e.Name(), ".md"))
		}
	}
	sort.Strings(out)
	return out
}

// Source returns a shipped notebook's text by name ("frontier" or
// "frontier.md").
func Source(name string) ([]byte, error) {
	name = strings.TrimSuffix(name, ".md")
	b, err := files.ReadFile(name + ".md")
	if err != nil {
		return nil, fmt.Errorf("no shipped notebook %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}
