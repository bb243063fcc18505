package synthesize

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
	"github.com/cualake/cualake/schemas"
)

// fixBuiltin is the builtin fixer: concrete repairs for what the other
// roles reported, one per issue it knows how to repair. It returns nil when
// it could repair nothing (the candidate is then dropped as unfixable).
func fixBuiltin(w *worker, c *Candidate, issues []Issue, seed int64) (*Candidate, []string) {
	crits, conj, err := looseCriteria(c.Judge)
	if err != nil {
		return nil, nil
	}
	steps, err := simdesk.ParseSetup(c.Setup)
	if err != nil {
		return nil, nil
	}
	n := c.clone()
	var fixes []string
	note := func(format string, a ...any) { fixes = append(fixes, fmt.Sprintf(format, a...)) }
	judgeDirty, setupDirty := false, false
	var restate []int // criteria whose values the instruction must state
	restateAll := false
	// A judge the checker could not run is read again for its compile error.
	for _, is := range issues {
		if is.Role == RoleChecker && is.Code == codeJudgeError {
			if _, err := judge.Compile(c.Judge); err != nil {
				issues = append(issues, compileIssue(err))
			}
		}
	}
	for _, is := range issues {
		k := is.Criterion
		valid := k >= 0 && k < len(crits)
		switch is.Code {
		case codeUnknownGetter:
			if !valid {
				continue
			}
			g := crits[k].Result
			if strings.HasPrefix(is.Field, "expected") {
				g = crits[k].Expected
			}
			if g == nil {
				continue
			}
			if good := nearest(g.Type, inverse(badGetters), strings.Split(judge.GetterNames(), ", ")); good != "" {
				note("criterion %d: getter %q -> %q", k, g.Type, good)
				g.Type, judgeDirty = good, true
			}
		case codeUnknownMetric:
			if !valid {
				continue
			}
			good := nearest(crits[k].Func, inverse(badMetrics), strings.Split(judge.MetricNames(), ", "))
			if good == "" {
				continue
			}
			note("criterion %d: metric %q -> %q", k, crits[k].Func, good)
			crits[k].Func, judgeDirty = good, true
			if e := crits[k].Expected; good == "check_include_exclude" && e != nil && e.Rules != nil && e.Rules.Expected != nil {
				e.Rules.Include, e.Rules.Expected = []string{judge.Text(e.Rules.Expected)}, nil
			}
		case codeBadArgument:
			if !valid {
				continue
			}
			switch {
			case strings.HasSuffix(is.Field, ".cell"):
				g := crits[k].Result
				if cell := swapRef(g.Cell); cell != "" {
					note("criterion %d: cell %q -> %q", k, g.Cell, cell)
					g.Cell, judgeDirty = cell, true
				}
			case strings.HasSuffix(is.Field, ".field"):
				g := crits[k].Result
				if good := nearest(g.Field, inverse(badFields), []string{"to", "cc", "subject", "body", "attachments"}); good != "" {
					note("criterion %d: mail field %q -> %q", k, g.Field, good)
					g.Field, judgeDirty = good, true
				}
			case strings.Contains(is.Field, "rules.expected") && strings.Contains(is.Detail, "number"):
				e := crits[k].Expected
				if e == nil || e.Rules == nil {
					continue
				}
				if m := numberRe.FindStringSubmatch(judge.Text(e.Rules.Expected)); m != nil {
					v, _ := strconv.ParseFloat(m[2], 64)
					note("criterion %d: expected %q -> %v", k, judge.Text(e.Rules.Expected), v)
					e.Rules.Expected, judgeDirty = v, true
				}
			default:
				// An unknown parameter disappears when the judge is rebuilt.
				if strings.Contains(is.Detail, "unknown parameter") {
					note("%s: removed", is.Field)
					judgeDirty = true
				}
			}
		case codeCommandSetup:
			before := len(steps)
			steps = slices.DeleteFunc(steps, func(s simdesk.SetupStep) bool { return !allowedSetup[s.Type] })
			if len(steps) < before {
				note("removed %d command step(s) from the setup", before-len(steps))
				setupDirty = true
			}
		case codeStructure:
			if len(n.Extra) > 0 && is.Field != "" && slices.Contains(n.Extra, is.Field) {
				n.Extra = slices.DeleteFunc(n.Extra, func(s string) bool { return s == is.Field })
				note("dropped the field %q", is.Field)
			}
		case codeMissingInput, codeVacuous:
			if slices.ContainsFunc(steps, func(s simdesk.SetupStep) bool { return absPath(stepPath(s)) == is.Path && s.Type == "create_file" }) {
				continue
			}
			content, ok := recoverContent(is.Path, crits, c.Instruction)
			if !ok {
				continue
			}
			steps = append([]simdesk.SetupStep{sCreate(vfs.Short(is.Path), content)}, steps...)
			note("setup: create %s", vfs.Short(is.Path))
			setupDirty = true
		case codeCellOutside:
			if !valid || crits[k].Result == nil {
				continue
			}
			cell := relocateCell(is, crits, c.Instruction, setupFiles(c.Setup))
			if cell == "" {
				continue
			}
			for i := range crits {
				if g := crits[i].Result; g != nil && g.Path == crits[k].Result.Path && g.Cell == is.Value {
					g.Cell = cell
				}
			}
			note("cell %s -> %s", is.Value, cell)
			judgeDirty = true
		case codeSetting:
			if !valid || crits[k].Result == nil {
				continue
			}
			switch is.Field {
			case "key":
				var keys []string
				for _, p := range simdesk.Pages {
					for _, s := range p.Settings {
						keys = append(keys, s.Key)
					}
				}
				if good := nearest(is.Value, nil, keys); good != "" {
					note("criterion %d: setting %q -> %q", k, is.Value, good)
					crits[k].Result.Key, judgeDirty = good, true
				}
			case "expected":
				def := simdesk.SettingByKey(crits[k].Result.Key)
				if def != nil && def.Kind == simdesk.KindChoice {
					if good := nearest(is.Value, nil, def.Options); good != "" {
						note("criterion %d: option %q -> %q", k, is.Value, good)
						crits[k].Expected.Rules.Expected, judgeDirty = good, true
					}
				}
			}
		case codeUngrounded:
			if !valid {
				continue
			}
			if fixUngrounded(&crits[k], is, crits, c, note) {
				judgeDirty = true
			} else {
				restate = append(restate, k)
			}
		case codePolarity:
			if valid && (crits[k].Func == "is_true" || crits[k].Func == "is_false") {
				nf := map[string]string{"is_true": "is_false", "is_false": "is_true"}[crits[k].Func]
				note("criterion %d: %s -> %s, as the instruction asks", k, crits[k].Func, nf)
				crits[k].Func, judgeDirty = nf, true
			}
		case codeUnstated:
			if valid {
				restate = append(restate, k)
			} else {
				restateAll = true
			}
		case codeVague, codeMeaningless:
			restateAll = true
		case codeInitialPasses:
			if i := achievingStep(w, n, steps, seed); i >= 0 {
				note("setup: removed step %d (%s), which already achieved the goal", i, steps[i].Type)
				steps = slices.Delete(steps, i, i+1)
				setupDirty = true
			}
		case codeUnreachable, codeNoPlan:
			if i := contradiction(crits); i >= 0 {
				note("criterion %d contradicts another and was removed", i)
				crits = slices.Delete(crits, i, i+1)
				judgeDirty = true
			}
		}
	}
	if judgeDirty {
		n.Judge = judge.Build(conj, crits...)
	}
	if setupDirty {
		n.Setup = simdesk.BuildSetup(steps...)
	}
	if restateAll || len(restate) > 0 {
		sel := crits
		if !restateAll {
			sel = nil
			for i, cr := range crits {
				if slices.Contains(restate, i) {
					sel = append(sel, cr)
				}
			}
		}
		ins := rewriteInstruction(c.Instruction, sel, n.Setup)
		if ins != c.Instruction {
			note("instruction rewritten to state what the judge checks")
			n.Instruction = ins
		}
	}
	if len(fixes) == 0 {
		return nil, nil
	}
	return n, fixes
}

func inverse(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[v] = k
	}
	return out
}

// nearest maps a wrong name to a known one: a known misspelling, else the
// most similar known name (at least half alike).
func nearest(bad string, known map[string]string, names []string) string {
	if g, ok := known[bad]; ok {
		return g
	}
	best, score := "", 0.5
	for _, n := range names {
		if s := judge.Similarity(strings.ToLower(bad), strings.ToLower(n)); s > score {
			best, score = n, s
		}
	}
	return best
}

// swapRef turns "7B" into "B7".
func swapRef(ref string) string {
	k := strings.IndexFunc(ref, func(r rune) bool { return r < '0' || r > '9' })
	if k <= 0 {
		return ""
	}
	cell := strings.ToUpper(ref[k:] + ref[:k])
	if _, _, err := sheet.ParseRef(cell); err != nil {
		return ""
	}
	return cell
}

// recoverContent guesses what a file the setup forgot held: the content a
// judge expects at a path of the same name (a rename or move keeps it),
// the expected content without what the instruction adds, or a placeholder
// for a file whose content the task does not look at. Sheets are not
// guessed.
func recoverContent(p string, crits []judge.Criterion, ins string) (string, bool) {
	var own *string
	for _, c := range crits {
		g := c.Result
		if g == nil || g.Type != "file_content" || c.Func != "exact_match" || c.Expected == nil || c.Expected.Rules == nil {
			continue
		}
		s := judge.Text(c.Expected.Rules.Expected)
		if g.Path == p {
			own = &s
			continue
		}
		if strings.HasSuffix(g.Path, "/"+lastElem(p)) {
			return s, true
		}
	}
	if own != nil {
		s := *own
		for _, q := range quotedRe.FindAllStringSubmatch(ins, -1) {
			s = strings.Replace(s, q[1], "", 1)
		}
		if s != *own {
			return s, true
		}
		return "", false
	}
	if strings.HasSuffix(p, ".csv") {
		return "", false
	}
	for _, c := range crits {
		if c.Result != nil && c.Result.Path == p && c.Result.Type != "file_exists" {
			return "", false
		}
	}
	return "Placeholder for " + lastElem(p) + ".\n", true
}

func lastElem(p string) string { return p[strings.LastIndex(p, "/")+1:] }

// relocateCell finds the cell the instruction means: one it names that no
// criterion reads yet, else the cell at the row and column whose labels
// the instruction mentions in the sheet the setup creates.
func relocateCell(is Issue, crits []judge.Criterion, ins string, files map[string]string) string {
	referenced := map[string]bool{}
	for _, c := range crits {
		if c.Result != nil && c.Result.Cell != "" && c.Result.Cell != is.Value {
			referenced[strings.ToUpper(c.Result.Cell)] = true
		}
	}
	var named []string
	for _, m := range cellRe.FindAllString(ins, -1) {
		if !referenced[m] && !slices.Contains(named, m) && !strings.Contains(ins, m+":") && !strings.Contains(ins, ":"+m) {
			named = append(named, m)
		}
	}
	if len(named) == 1 {
		return named[0]
	}
	sh, err := sheet.ParseCSV(files[is.Path])
	if err != nil || len(sh.Cells) < 2 {
		return ""
	}
	low := strings.ToLower(ins)
	mentioned := func(s string) bool {
		return s != "" && regexp.MustCompile(`\b`+regexp.QuoteMeta(strings.ToLower(s))+`\b`).MatchString(low)
	}
	row, col := -1, -1
	for r := 1; r < len(sh.Cells); r++ {
		if mentioned(sh.Raw(r, 0)) {
			if row >= 0 {
				return ""
			}
			row = r
		}
	}
	for c := 1; c < len(sh.Cells[0]); c++ {
		if mentioned(sh.Raw(0, c)) {
			if col >= 0 {
				return ""
			}
			col = c
		}
	}
	if row < 0 || col < 0 {
		return ""
	}
	return sheet.RefName(row, col)
}

// fixUngrounded replaces an expected value the instruction does not state
// with the closest one it does state; false when there is none.
func fixUngrounded(c *judge.Criterion, is Issue, crits []judge.Criterion, cand *Candidate, note func(string, ...any)) bool {
	if s, ok := strings.CutPrefix(is.Field, "suggest:"); ok && c.Expected != nil && c.Expected.Rules != nil {
		if v, ok := sheet.ParseNumber(s); ok {
			note("criterion %d: expected %s -> %s (what the formula gives)", is.Criterion, is.Value, s)
			c.Expected.Rules.Expected = v
			return true
		}
	}
	ins := cand.Instruction
	if c.Result != nil && c.Result.Path != "" && c.Result.Path == is.Value {
		return false
	}
	if c.Expected == nil || c.Expected.Rules == nil {
		return false
	}
	r := c.Expected.Rules
	// Literals other criteria already use are not candidates.
	usedLits := map[string]bool{}
	for i, o := range crits {
		if o.Expected != nil && o.Expected.Rules != nil && i != is.Criterion {
			usedLits[judge.Text(o.Expected.Rules.Expected)] = true
		}
	}
	expected := r.Expected
	if str, ok := expected.(string); ok {
		if n, err := strconv.ParseFloat(str, 64); err == nil {
			expected = n // a number written as text: the closest stated number
		}
	}
	switch v := expected.(type) {
	case float64:
		best, dist := 0.0, math.Inf(1)
		for _, m := range numberRe.FindAllStringSubmatch(ins, -1) {
			n, err := strconv.ParseFloat(m[2], 64)
			if err == nil && math.Abs(n-v) < dist && !usedLits[m[2]] {
				best, dist = n, math.Abs(n-v)
			}
		}
		if dist <= math.Max(20, math.Abs(v)/2) {
			note("criterion %d: expected %s -> %s, as the instruction states", is.Criterion, sheet.FormatNumber(v), sheet.FormatNumber(best))
			if _, isStr := r.Expected.(string); isStr {
				r.Expected = sheet.FormatNumber(best)
			} else {
				r.Expected = best
			}
			return true
		}
		return false
	case []any:
		return fixTable(v, cand, is, note)
	}
	st := setupText(cand.Setup)
	lits := append(instructionLiterals(ins), emailRe.FindAllString(st, -1)...)
	for _, m := range quotedRe.FindAllStringSubmatch(st, -1) {
		lits = append(lits, m[1])
	}
	if c.Result != nil && c.Result.Type == "setting" {
		if def := simdesk.SettingByKey(c.Result.Key); def != nil && len(def.Options) > 0 {
			var named []string
			for _, o := range def.Options {
				if regexp.MustCompile(`(?i)(^|[^\w/])` + regexp.QuoteMeta(o) + `($|[^\w/])`).MatchString(ins) {
					named = append(named, o)
				}
			}
			if len(named) == 1 {
				// The instruction names exactly one option of this setting.
				note("criterion %d: expected %q -> %q, the option the instruction names", is.Criterion, judge.Text(r.Expected), named[0])
				r.Expected = named[0]
				return true
			}
		}
	}
	corpus := ins + "\n" + setupText(cand.Setup)
	target := is.Value
	if fixed, ok := fixWords(target, corpus); ok {
		for i, s := range r.Include {
			if s == target {
				r.Include[i] = fixed
				note("criterion %d: misspelt words of %q corrected from the instruction and setup", is.Criterion, clip(target, 40))
				return true
			}
		}
		if s, isStr := r.Expected.(string); isStr && s == target {
			note("criterion %d: misspelt words of %q corrected from the instruction and setup", is.Criterion, clip(target, 40))
			r.Expected = fixed
			return true
		}
	}
	if fixed, ok := fixLines(judge.Text(r.Expected), corpus); ok && c.Func != "check_include_exclude" {
		if _, isStr := r.Expected.(string); isStr {
			note("criterion %d: expected text restored line by line from the instruction and setup", is.Criterion)
			r.Expected = fixed
			return true
		}
	}
	best, score := "", 0.5
	for _, l := range lits {
		if usedLits[l] && l != target {
			continue
		}
		if s := judge.Similarity(strings.ToLower(target), strings.ToLower(l)); s > score && l != target {
			best, score = l, s
		}
	}
	if best == "" {
		return false
	}
	for i, s := range r.Include {
		if s == target {
			r.Include[i] = best
			note("criterion %d: expected text %q -> %q, as the instruction states", is.Criterion, clip(target, 40), clip(best, 40))
			return true
		}
	}
	if prefix := "Re: "; strings.HasPrefix(judge.Text(r.Expected), prefix) && !strings.HasPrefix(best, prefix) {
		best = prefix + best
	}
	note("criterion %d: expected %q -> %q, as the instruction states", is.Criterion, clip(judge.Text(r.Expected), 40), clip(best, 40))
	r.Expected = best
	return true
}

var wordRe = regexp.MustCompile(`[\p{L}\p{N}]+`)

// fixWords corrects words the corpus does not hold to the most similar word
// it does (a typo), keeping everything else.
func fixWords(text, corpus string) (string, bool) {
	known := map[string]bool{}
	var words []string
	for _, w := range wordRe.FindAllString(corpus, -1) {
		if !known[w] {
			known[w] = true
			words = append(words, w)
		}
	}
	lower := tokenSet(corpus)
	changed, failed := false, false
	out := wordRe.ReplaceAllStringFunc(text, func(w string) string {
		if lower[strings.ToLower(w)] {
			return w
		}
		if strings.ContainsAny(w, "0123456789") {
			// A wrong number is not a typo: leave it to the caller.
			failed = true
			return w
		}
		best, score := "", 0.6
		for _, k := range words {
			if len(k) == len(w) || len(k) == len(w)+1 || len(k)+1 == len(w) {
				// Case-insensitive likeness, ties broken by matching case.
				if s := judge.Similarity(strings.ToLower(w), strings.ToLower(k)) + 0.01*judge.Similarity(w, k); s > score {
					best, score = k, s
				}
			}
		}
		if best == "" {
			failed = true
			return w
		}
		changed = true
		return best
	})
	return out, changed && !failed
}

// fixLines replaces each line of a multi-line text that the corpus does
// not hold by the most similar line it does hold.
func fixLines(text, corpus string) (string, bool) {
	if !strings.Contains(strings.TrimRight(text, "\n"), "\n") {
		return "", false
	}
	var pool []string
	norm := normText(corpus)
	for _, l := range strings.Split(corpus, "\n") {
		if strings.TrimSpace(l) != "" {
			pool = append(pool, l)
		}
	}
	lines := strings.Split(text, "\n")
	changed := false
	for i, l := range lines {
		if strings.TrimSpace(l) == "" || strings.Contains(norm, normText(l)) {
			continue
		}
		best, score := "", 0.6
		for _, p := range pool {
			if s := judge.Similarity(l, p); s > score {
				best, score = p, s
			}
		}
		if best == "" {
			return "", false
		}
		lines[i], changed = best, true
	}
	return strings.Join(lines, "\n"), changed
}

// instructionLiterals are the values an instruction states: quoted
// strings, e-mail addresses, paths, and a trailing text block.
func instructionLiterals(ins string) []string {
	var out []string
	for _, m := range quotedRe.FindAllStringSubmatch(ins, -1) {
		out = append(out, m[1])
	}
	out = append(out, emailRe.FindAllString(ins, -1)...)
	for _, p := range instructionPaths(ins) {
		out = append(out, p.path)
	}
	if _, block, ok := strings.Cut(ins, ":\n"); ok {
		block, _, _ = strings.Cut(block, "\nThen ")
		out = append(out, strings.TrimSpace(block))
	}
	return out
}

// fixTable replaces table rows that the instruction or setup do not hold
// with the most similar row they do hold.
func fixTable(rows []any, c *Candidate, is Issue, note func(string, ...any)) bool {
	var source [][]string
	for _, content := range setupFiles(c.Setup) {
		if sh, err := sheet.ParseCSV(content); err == nil {
			source = append(source, sh.Cells...)
		}
	}
	for _, line := range strings.Split(c.Instruction, "\n") {
		if strings.Contains(line, " | ") {
			source = append(source, strings.Split(line, " | "))
		}
	}
	changed := false
	for i, r := range rows {
		cells, ok := r.([]any)
		if !ok {
			continue
		}
		row := make([]string, len(cells))
		for j, x := range cells {
			row[j] = judge.Text(x)
		}
		if slices.ContainsFunc(source, func(s []string) bool { return slices.Equal(s, row) }) {
			continue
		}
		best, score := -1, 0.0
		for k, s := range source {
			if len(s) == len(row) {
				if sim := judge.Similarity(strings.Join(s, ","), strings.Join(row, ",")); sim > score {
					best, score = k, sim
				}
			}
		}
		if best < 0 {
			continue
		}
		fixed := make([]any, len(source[best]))
		for j, x := range source[best] {
			fixed[j] = x
		}
		rows[i] = fixed
		changed = true
	}
	if changed {
		note("criterion %d: table rows restored from the setup and instruction", is.Criterion)
	}
	return changed
}

// rewriteInstruction drops sentences with vague wording and states what
// the judge checks.
func rewriteInstruction(ins string, crits []judge.Criterion, setup string) string {
	var keep []string
	for _, s := range splitSentences(ins) {
		if !vagueRe.MatchString(s) {
			keep = append(keep, s)
		}
	}
	stated := verbalize(crits, setup)
	if stated == "" {
		return ins
	}
	return strings.TrimSpace(strings.Join(append(keep, stated), " "))
}

func splitSentences(s string) []string {
	var out []string
	for _, part := range regexp.MustCompile(`(?s)(.*?[.!?])(\s+|$)`).FindAllStringSubmatch(s, -1) {
		out = append(out, strings.TrimSpace(part[1]))
	}
	if len(out) == 0 {
		return []string{s}
	}
	return out
}

// achievingStep finds a setup step (last first) without which the
// untouched state no longer satisfies the judge.
func achievingStep(w *worker, c *Candidate, steps []simdesk.SetupStep, seed int64) int {
	for i := len(steps) - 1; i >= 0; i-- {
		rest := slices.Delete(slices.Clone(steps), i, i+1)
		t := schemas.Task{TaskID: "fixer", Setup: simdesk.BuildSetup(rest...), Judge: c.Judge}
		if _, err := w.sim.Reset(t, seed); err != nil {
			continue
		}
		if score, _, err := w.sim.Evaluate(); err == nil && score == 0 {
			return i
		}
	}
	return -1
}

// contradiction returns a criterion that asks a path to be absent while an
// earlier one wants it present (or the reverse), -1 when there is none.
func contradiction(crits []judge.Criterion) int {
	present := func(c judge.Criterion) bool {
		return c.Result != nil && c.Result.Path != "" && c.Func != "is_false"
	}
	absent := func(c judge.Criterion) bool {
		return c.Result != nil && (c.Result.Type == "file_exists" || c.Result.Type == "folder_exists") && c.Func == "is_false"
	}
	for k := 1; k < len(crits); k++ {
		for i := 0; i < k; i++ {
			a, b := crits[i], crits[k]
			if a.Result == nil || b.Result == nil || a.Result.Path != b.Result.Path {
				continue
			}
			if (present(a) && absent(b)) || (absent(a) && present(b)) {
				return k
			}
		}
	}
	return -1
}
