package audit_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cualake/cualake/pipeline/audit"
	"github.com/cualake/cualake/schemas"
)

type pairs struct {
	Pairs []audit.Pair `json:"pairs"`
	Total int          `json:"pairs_total"`
}

func pairSet(t *testing.T, r schemas.Audit) []string {
	t.Helper()
	var p pairs
	breakdown(t, r, &p)
	var out []string
	for _, x := range p.Pairs {
		out = append(out, x.Train+">"+x.Eval)
	}
	if len(out) != p.Total {
		t.Errorf("%s/%s lists %d pairs, says %d", r.Metric, r.Group, len(out), p.Total)
	}
	sort.Strings(out)
	return out
}

func same(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestOverlapByHand(t *testing.T) {
	eval := audit.Pool{Desc: map[string]any{"name": "eval"}, Items: []audit.Item{
		{ID: "e1", Domain: "chrome", Instruction: "Open the settings page and enable dark mode.",
			Setup: `[{"type":"launch","parameters":{"command":["chrome"]}}]`, Judge: `{"func":"check_dark","expected":{"value":true}}`},
		{ID: "e2", Domain: "os", Instruction: "Rename the file report.txt to final.txt", Setup: `[]`, Judge: `{"func":"exact_match","expected":"final.txt"}`},
		{ID: "e3", Domain: "os", Instruction: "Delete all empty folders in the home directory", Setup: `[]`, Judge: `{"func":"infeasible"}`},
		{ID: "e4", Domain: "calc", Instruction: "Sum column B into cell B10 and save", Setup: `[]`, Judge: `{}`},
	}}
	train := audit.Pool{Desc: map[string]any{"name": "train"}, Items: []audit.Item{
		// t1: e1 with reordered keys and whitespace: an exact full-JSON duplicate (so also the rest).
		{ID: "t1", Domain: "chrome", Instruction: "Open the settings page and enable dark mode.",
			Setup: `[ {"parameters": {"command": ["chrome"]}, "type": "launch"} ]`, Judge: `{"expected": {"value": true}, "func": "check_dark"}`},
		// t2: same normalised instruction as e1, another judge.
		{ID: "t2", Domain: "chrome", Instruction: "OPEN the settings page, and enable dark-mode!", Setup: `[]`, Judge: `{"func":"check_dark","expected":{"value":false}}`},
		// t3: word Jaccard with e2 is 6/8 = 0.75 < 0.8, so composite < 0.9: not a near-duplicate.
		{ID: "t3", Domain: "os", Instruction: "Rename the file report.txt to final2.txt", Setup: `[]`, Judge: `{"func":"exact_match","expected":"final2.txt"}`},
		// t4: e3 plus one word (Jaccard 8/9) and e3's judge.
		{ID: "t4", Domain: "os", Instruction: "Delete all empty folders in the home directory now", Setup: `[{"type":"sleep"}]`, Judge: `{"func": "infeasible"}`},
		// t5: new task; its empty judge equals e4's but empty judges are not "reused".
		{ID: "t5", Domain: "calc", Instruction: "Create a pivot table of sales by region", Setup: `[]`, Judge: `{}`},
		// t6: new instruction reusing e2's judge.
		{ID: "t6", Domain: "calc", Instruction: "Insert a bar chart of column C", Setup: `[]`, Judge: `{"expected":"final.txt","func":"exact_match"}`},
	}}
	if s := audit.Similarity(audit.NormalizeInstruction(train.Items[3].Instruction), audit.NormalizeInstruction(eval.Items[2].Instruction)); s < 0.9 {
		t.Fatalf("t4/e3 similarity %v: the fixture should plant a near-duplicate", s)
	}
	res, err := audit.OverlapPools(train, eval, audit.DefaultThreshold)
	if err != nil {
		t.Fatal(err)
	}
	// Per training domain: chrome {t1, t2}, os {t3, t4}, calc {t5, t6}.
	expect(t, res, audit.MetricTrainTasks, "chrome", 2, 2)
	expect(t, res, audit.MetricExactJSON, "chrome", 0.5, 1)
	expect(t, res, audit.MetricInstructionDup, "chrome", 1, 2)
	expect(t, res, audit.MetricNearDup, "chrome", 1, 2)
	expect(t, res, audit.MetricJudgeReuse, "chrome", 0.5, 1)
	expect(t, res, audit.MetricExactJSON, "os", 0, 0)
	expect(t, res, audit.MetricInstructionDup, "os", 0, 0)
	expect(t, res, audit.MetricNearDup, "os", 0.5, 1)
	expect(t, res, audit.MetricJudgeReuse, "os", 0.5, 1)
	expect(t, res, audit.MetricNearDup, "calc", 0, 0)
	expect(t, res, audit.MetricJudgeReuse, "calc", 0.5, 1)
	expect(t, res, audit.MetricTrainTasks, "all", 6, 6)
	expect(t, res, audit.MetricEvalTasks, "all", 4, 4)
	for metric, want := range map[string][]string{
		audit.MetricExactJSON:      {"t1>e1"},
		audit.MetricInstructionDup: {"t1>e1", "t2>e1"},
		audit.MetricNearDup:        {"t1>e1", "t2>e1", "t4>e3"},
		audit.MetricJudgeReuse:     {"t1>e1", "t4>e3", "t6>e2"},
	} {
		r := expect(t, res, metric, "all", float64(len(want))/6, int64(len(want)))
		if got := pairSet(t, r); !same(got, want) {
			t.Errorf("%s pairs %v, want %v", metric, got, want)
		}
	}
	var p pairs
	breakdown(t, row(t, res, audit.MetricNearDup, "os"), &p)
	if len(p.Pairs) != 1 || p.Pairs[0].Similarity == nil || *p.Pairs[0].Similarity < 0.9 || p.Pairs[0].EvalText == "" {
		t.Fatalf("near-duplicate pair detail: %+v", p.Pairs)
	}
	breakdown(t, row(t, res, audit.MetricJudgeReuse, "calc"), &p)
	if p.Pairs[0].JudgeFunc != "exact_match" {
		t.Fatalf("judge reuse names the function: %+v", p.Pairs[0])
	}
	for _, r := range res.Rows {
		var params map[string]any
		if err := json.Unmarshal([]byte(r.Params), &params); err != nil || params["kind"] != "overlap" || params["threshold"] != 0.9 {
			t.Fatalf("params %s", r.Params)
		}
	}
	// The same pools in another order give the same rows.
	rev := train
	rev.Items = append([]audit.Item(nil), train.Items...)
	sort.Slice(rev.Items, func(a, b int) bool { return rev.Items[a].ID > rev.Items[b].ID })
	res2, _ := audit.OverlapPools(rev, eval, audit.DefaultThreshold)
	if fmt.Sprint(res2.Rows) != fmt.Sprint(res.Rows) {
		t.Fatal("row order depends on input order")
	}
	if _, err := audit.OverlapPools(train, eval, 0.4); err == nil {
		t.Fatal("a threshold of 0.4 is accepted")
	}
}

func TestWithinPools(t *testing.T) {
	tasks := []schemas.Task{
		{TaskID: "a", Source: schemas.SourceImported, Split: "train"},
		{TaskID: "b", Source: schemas.SourceSynthesized, Split: "heldout"},
		{TaskID: "c", Source: schemas.SourceComposed, Split: "train"},
		{TaskID: "d", Source: schemas.SourceSeed},
	}
	ids := func(p audit.Pool) string {
		var s []string
		for _, it := range p.Items {
			s = append(s, it.ID)
		}
		return fmt.Sprint(s)
	}
	tr, ev, err := audit.WithinPools(tasks, audit.WithinSource, "snap")
	if err != nil || ids(tr) != "[b c]" || ids(ev) != "[a d]" {
		t.Fatalf("by source: %s %s %v", ids(tr), ids(ev), err)
	}
	tr, ev, err = audit.WithinPools(tasks, audit.WithinAuto, "snap")
	if err != nil || ids(tr) != "[a c]" || ids(ev) != "[b]" || tr.Desc["by"] != "split" {
		t.Fatalf("auto picks split: %s %s %v", ids(tr), ids(ev), err)
	}
	if _, _, err := audit.WithinPools(tasks, "bogus", "snap"); err == nil {
		t.Fatal("bogus mode accepted")
	}
}

// osworldDir finds the OSWorld sample at ../shared/data/osworld from the
// repository root.
func osworldDir(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("repository root not found")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", "osworld")
	if !audit.IsOSWorldDir(p) {
		t.Skipf("the OSWorld sample is not at %s; skipping", p)
	}
	return p
}

// The OSWorld sample against a hand-built synthesized pool with planted
// duplicates: exactly the planted tasks are flagged, each for what was
// planted.
func TestOverlapAgainstOSWorldSample(t *testing.T) {
	dir := osworldDir(t)
	eval, err := audit.ReadOSWorld(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(eval.Items) != 181 || eval.Desc["sha256"] == "" {
		t.Fatalf("read %d OSWorld tasks (want 181), desc %v", len(eval.Items), eval.Desc)
	}
	byID := map[string]audit.Item{}
	for _, it := range eval.Items {
		byID[it.ID] = it
	}
	get := func(id string) audit.Item {
		it, ok := byID[id]
		if !ok {
			t.Fatalf("OSWorld task %s is not in the sample", id)
		}
		return it
	}
	x := get("4172ea6e-6b77-4edb-a9cc-c0014bd1603b") // libreoffice_calc: maturity dates
	// Pick the other planted sources by shape: long instructions and an evaluator used once.
	judgeUses := map[string]int{}
	for _, it := range eval.Items {
		judgeUses[audit.CanonicalJSON(it.Judge)]++
	}
	var long []audit.Item
	for _, it := range eval.Items {
		if it.ID != x.ID && len(audit.NormalizeInstruction(it.Instruction)) > 120 && judgeUses[audit.CanonicalJSON(it.Judge)] == 1 {
			long = append(long, it)
		}
	}
	if len(long) < 3 {
		t.Fatalf("want 3 long OSWorld instructions with unique evaluators, found %d", len(long))
	}
	y, z, w := long[0], long[1], long[2]
	novel := func(i int) string { return fmt.Sprintf(`{"func":"synthetic_check_%d","expected":{"value":%d}}`, i, i) }
	train := audit.Pool{Desc: map[string]any{"name": "synthesized"}, Items: []audit.Item{
		{ID: "p1-exact", Domain: x.Domain, Instruction: x.Instruction, Setup: x.Setup, Judge: x.Judge},
		{ID: "p2-instruction", Domain: y.Domain, Instruction: "  " + toUpperPunct(y.Instruction) + "!!", Setup: `[]`, Judge: novel(2)},
		{ID: "p3-near", Domain: z.Domain, Instruction: z.Instruction + " Thanks", Setup: `[]`, Judge: novel(3)},
		{ID: "p4-judge", Domain: w.Domain, Instruction: "Paint the zebra's stripes teal in the sketch program", Setup: `[]`, Judge: w.Judge},
		{ID: "p5", Domain: "gimp", Instruction: "Quantise the harpsichord waveform into seventeen buckets", Setup: `[]`, Judge: novel(5)},
		{ID: "p6", Domain: "os", Instruction: "Compose a limerick about penguins in a new file", Setup: `[]`, Judge: novel(6)},
		{ID: "p7", Domain: "chrome", Instruction: "Bookmark three recipes for lemon meringue pie", Setup: `[]`, Judge: novel(7)},
		{ID: "p8", Domain: "libreoffice_calc", Instruction: "Tabulate the orbital periods of Jovian moons", Setup: `[]`, Judge: novel(8)},
	}}
	if s := audit.Similarity(audit.NormalizeInstruction(train.Items[2].Instruction), audit.NormalizeInstruction(z.Instruction)); s < 0.9 {
		t.Fatalf("the planted near-duplicate has similarity %v", s)
	}
	res, err := audit.OverlapPools(train, eval, audit.DefaultThreshold)
	if err != nil {
		t.Fatal(err)
	}
	flagged := func(metric string) []string {
		seen := map[string]bool{}
		for _, p := range pairSetRaw(t, row(t, res, metric, "all")) {
			seen[p.Train] = true
		}
		var out []string
		for k := range seen {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	want := map[string][]string{
		audit.MetricExactJSON:      {"p1-exact"},
		audit.MetricInstructionDup: {"p1-exact", "p2-instruction"},
		audit.MetricNearDup:        {"p1-exact", "p2-instruction", "p3-near"},
		audit.MetricJudgeReuse:     {"p1-exact", "p4-judge"},
	}
	for metric, ids := range want {
		if got := flagged(metric); !same(got, ids) {
			t.Errorf("%s flags %v, want %v", metric, got, ids)
		}
		expect(t, res, metric, "all", float64(len(ids))/8, int64(len(ids)))
	}
	// The planted pairs point at the tasks they were planted from.
	for metric, pair := range map[string]string{audit.MetricExactJSON: "p1-exact>" + x.ID, audit.MetricInstructionDup: "p2-instruction>" + y.ID,
		audit.MetricNearDup: "p3-near>" + z.ID, audit.MetricJudgeReuse: "p4-judge>" + w.ID} {
		found := false
		for _, p := range pairSet(t, row(t, res, metric, "all")) {
			found = found || p == pair
		}
		if !found {
			t.Errorf("%s lacks the planted pair %s", metric, pair)
		}
	}
	expect(t, res, audit.MetricEvalTasks, "all", 181, 181)
}

func pairSetRaw(t *testing.T, r schemas.Audit) []audit.Pair {
	var p pairs
	breakdown(t, r, &p)
	return p.Pairs
}

// toUpperPunct changes case and punctuation but not the normalised text.
func toUpperPunct(s string) string {
	out := []rune{}
	for _, r := range s {
		switch r {
		case ' ':
			out = append(out, ' ', ' ')
		case 'a', 'e', 'o':
			out = append(out, r-32)
		default:
			out = append(out, r)
		}
	}
	return string(out) + "?"
}
