package synthesize

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"unicode"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// decodeLoose decodes JSON ignoring unknown fields (for reading what a
// candidate says, not for validating it).
func decodeLoose(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// normText lowercases and collapses whitespace, for containment tests.
func normText(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// normInstruction is the duplicate key of an instruction: lowercase words
// and numbers only.
func normInstruction(s string) string { return strings.Join(tokens(s), " ") }

// tokens splits text into lowercase words and numbers.
func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func tokenSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, t := range tokens(s) {
		m[t] = true
	}
	return m
}

var (
	pathRe   = regexp.MustCompile(`~/[^\s"'(),;:!?]+`)
	quotedRe = regexp.MustCompile(`"([^"\n]+)"`)
	emailRe  = regexp.MustCompile(`[A-Za-z0-9._-]+@[A-Za-z0-9.-]+\.[a-z]{2,}`)
	numberRe = regexp.MustCompile(`(^|[^A-Za-z0-9.:])(-?\d+(?:\.\d+)?)`)
	cellRe   = regexp.MustCompile(`\b([A-Z]{1,2}[1-9][0-9]{0,2})\b`)
)

// instructionPaths returns the ~/ paths an instruction names, with the
// byte offset of each.
func instructionPaths(ins string) []struct {
	path string
	at   int
} {
	var out []struct {
		path string
		at   int
	}
	for _, m := range pathRe.FindAllStringIndex(ins, -1) {
		p := strings.TrimRight(ins[m[0]:m[1]], ".")
		out = append(out, struct {
			path string
			at   int
		}{p, m[0]})
	}
	return out
}

// setupText gathers the strings a setup writes (file contents, mail,
// settings, typed text, paths): what a judge's literals may come from.
func setupText(setup string) string {
	steps, err := simdesk.ParseSetup(setup)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, st := range steps {
		var m map[string]any
		if decodeLoose(st.Parameters, &m) != nil {
			continue
		}
		for _, k := range []string{"path", "content", "text", "value", "key", "from", "subject", "body", "cell"} {
			if s, ok := m[k].(string); ok {
				b.WriteString(s)
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// setupFiles returns the files a setup creates with create_file, by clean
// path, with their content.
func setupFiles(setup string) map[string]string {
	out := map[string]string{}
	steps, err := simdesk.ParseSetup(setup)
	if err != nil {
		return out
	}
	for _, st := range steps {
		if st.Type != "create_file" {
			continue
		}
		var p struct{ Path, Content string }
		if decodeLoose(st.Parameters, &p) == nil {
			if c, err := vfs.Clean(p.Path); err == nil {
				out[c] = p.Content
			}
		}
	}
	return out
}

// looseCriteria reads a judge's criteria without validating them, for
// roles that review what a spec says even when it would not compile.
func looseCriteria(spec string) ([]judge.Criterion, string, error) {
	if j, err := judge.Compile(spec); err == nil {
		return j.Criteria, j.Conj, nil
	}
	var raw struct {
		Func     json.RawMessage `json:"func"`
		Result   json.RawMessage `json:"result"`
		Expected json.RawMessage `json:"expected"`
		Options  json.RawMessage `json:"options"`
		Conj     string          `json:"conj"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(spec)))
	if err := dec.Decode(&raw); err != nil {
		return nil, "", err
	}
	var funcs []string
	list := len(raw.Func) > 0 && raw.Func[0] == '['
	if list {
		if err := json.Unmarshal(raw.Func, &funcs); err != nil {
			return nil, "", err
		}
	} else {
		var f string
		if err := json.Unmarshal(raw.Func, &f); err != nil {
			return nil, "", err
		}
		funcs = []string{f}
	}
	split := func(r json.RawMessage) []json.RawMessage {
		out := make([]json.RawMessage, len(funcs))
		if len(r) == 0 {
			return out
		}
		if !list {
			out[0] = r
			return out
		}
		var items []json.RawMessage
		_ = json.Unmarshal(r, &items)
		copy(out, items)
		return out
	}
	res, exp, opt := split(raw.Result), split(raw.Expected), split(raw.Options)
	cs := make([]judge.Criterion, len(funcs))
	for i, f := range funcs {
		cs[i].Func = f
		if len(res[i]) > 0 && string(res[i]) != "null" {
			cs[i].Result = &judge.Getter{}
			_ = json.Unmarshal(res[i], cs[i].Result)
		}
		if len(exp[i]) > 0 && string(exp[i]) != "null" {
			cs[i].Expected = &judge.Getter{}
			_ = json.Unmarshal(exp[i], cs[i].Expected)
		}
		if len(opt[i]) > 0 {
			_ = json.Unmarshal(opt[i], &cs[i].Options)
		}
	}
	conj := raw.Conj
	if conj == "" {
		conj = "and"
	}
	return cs, conj, nil
}

// clip shortens text for reasons.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
