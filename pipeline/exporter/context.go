package exporter

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/cualake/cualake/pipeline/rollout"
)

// PolicySystemPrompt is the system prompt of cualake's rollout policy
// (rollout.SystemPrompt): the action format the model must answer in.
// Prompt and SFT exports start with it so that trained models see the
// context the policy sees at rollout time.
const PolicySystemPrompt = rollout.SystemPrompt

// TaskIntro is the first user text of the rollout policy's context: the
// task and, once turns have left the screenshot window, their actions as a
// numbered compact history.
func TaskIntro(instruction string, earlier []string) string {
	s := "Task: " + instruction
	if len(earlier) == 0 {
		return s
	}
	lines := make([]string, len(earlier))
	for i, a := range earlier {
		lines[i] = fmt.Sprintf("%d. %s", i+1, a)
	}
	return s + "\nEarlier actions:\n" + strings.Join(lines, "\n")
}

// nameAliases maps normalised spellings of one app to the one cualake uses
// (OSWorld's domain folder names).
var nameAliases = map[string]string{
	"vscode":             "vs_code",
	"visual_studio_code": "vs_code",
	"google_chrome":      "chrome",
	"libreofficecalc":    "libreoffice_calc",
	"libreofficewriter":  "libreoffice_writer",
	"libreofficeimpress": "libreoffice_impress",
}

// NormalizeName gives a domain or app name one spelling: lower case, runs
// of anything but letters and digits as one "_", trimmed, then the aliases
// of nameAliases ("LibreOffice Calc" and "libreoffice_calc" are both
// "libreoffice_calc"; "vscode" is "vs_code").
func NormalizeName(s string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			sep = false
			b.WriteRune(r)
			continue
		}
		sep = true
	}
	n := b.String()
	if a, ok := nameAliases[n]; ok {
		return a
	}
	return n
}
