package synthesize

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/schemas"
)

// verifyTask dry-runs a task independently of the stage: the untouched
// state scores 0 and the oracle reaches 1, for two seeds.
func verifyTask(t *testing.T, sim *simdesk.Sim, task schemas.Task) {
	t.Helper()
	for _, seed := range []int64{0, 7} {
		if _, err := sim.Reset(task, seed); err != nil {
			t.Errorf("%s: reset: %v", task.TaskID, err)
			return
		}
		if score, detail, err := sim.Evaluate(); err != nil || score != 0 {
			t.Errorf("%s: untouched state scores %v (%v): %s", task.TaskID, score, err, detail)
		}
		pol, err := simdesk.Oracle(task)
		if err != nil {
			t.Errorf("%s: oracle: %v", task.TaskID, err)
			return
		}
		ep, err := simdesk.Run(sim, pol, task, seed, simdesk.MaxOracleSteps)
		if err != nil || ep.Score != 1 {
			t.Errorf("%s: oracle scores %v (%v): %s\n%s", task.TaskID, ep.Score, err, ep.Detail, task.Judge)
		}
	}
}

func TestBuiltinSynthesisFromEachDocument(t *testing.T) {
	docs, err := SimdeskDocs()
	if err != nil {
		t.Fatal(err)
	}
	pool := simdesk.Pool()
	poolIDs := map[string]bool{}
	for _, task := range pool {
		poolIDs[task.TaskID] = true
	}
	sim, err := simdesk.NewSim(simdesk.Options{TreeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		t.Run(d.App, func(t *testing.T) {
			if len(d.Capabilities()) < 4 || !strings.Contains(d.Text, "## Judge getters") || !strings.Contains(d.Text, "## Task capabilities") {
				t.Fatalf("document %s: capabilities %v", d.Name, d.Capabilities())
			}
			p := DefaultParams()
			p.Count, p.Workers, p.Seed = 8, 4, 1
			res, err := Run(context.Background(), Input{Docs: []Doc{d}}, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Accepted) < p.Count {
				t.Fatalf("accepted %d, want >= %d: %+v", len(res.Accepted), p.Count, res.Summary)
			}
			if len(res.Tasks) != len(pool)+len(res.Accepted) {
				t.Fatalf("pool %d + accepted %d != %d tasks", len(pool), len(res.Accepted), len(res.Tasks))
			}
			accepted := map[string]bool{}
			for _, r := range res.Records {
				if r.Accepted {
					accepted[r.TaskID] = true
				}
				if err := schemas.SynthesisRecords.Validate(&r); err != nil {
					t.Fatalf("row %s/%d: %v", r.CandidateID, r.Round, err)
				}
			}
			for _, task := range res.Accepted {
				if poolIDs[task.TaskID] || !accepted[task.TaskID] {
					t.Errorf("%s: id collides with the pool or has no accepted row", task.TaskID)
				}
				if task.Source != schemas.SourceSynthesized || task.Split != "train" || task.Origin != d.Name ||
					task.App != d.App || len(task.Abilities) == 0 || task.Difficulty < 1 {
					t.Errorf("%s: row %+v", task.TaskID, task)
				}
				if err := schemas.Tasks.Validate(&task); err != nil {
					t.Errorf("%s: %v", task.TaskID, err)
				}
				verifyTask(t, sim, task)
			}
		})
	}
}

// stageFor builds a stage with builtin roles for driving single candidates.
func stageFor(p Params) *stage {
	p = p.withDefaults()
	s := &stage{p: p, judger: builtinJudger{}, checker: builtinChecker{}, fixer: builtinFixer{}, without: map[string]bool{},
		config: p.Config(), roleT: map[string]time.Duration{}}
	for _, w := range p.Without {
		s.without[w] = true
	}
	return s
}

// firstRejecter runs the roles in loop order and says who rejects first.
func firstRejecter(t *testing.T, w *worker, c *Candidate) (string, string) {
	t.Helper()
	if is := validateRules(w.sim.Desktop(), c); len(is) > 0 {
		return RoleRules, reasons(is)
	}
	if is := reviewBuiltin(c); len(is) > 0 {
		return RoleJudger, reasons(is)
	}
	if r := (builtinChecker{}).check(context.Background(), w, c, 1); !r.reachable || !r.correct {
		return RoleChecker, r.reason()
	}
	return "", ""
}

func renameCandidate() *Candidate {
	text := "Budget notes\nowner: Alice Martin\nstatus: draft 2\n"
	return &Candidate{
		Instruction: `In the Documents folder, rename "budget-old.txt" to "budget-2024.txt".`,
		App:         "files",
		Setup:       simdesk.BuildSetup(sCreate("~/Documents/budget-old.txt", text)),
		Judge: judge.Build("and", cExists("~/Documents/budget-2024.txt"), cMissing("~/Documents/budget-old.txt"),
			cContent("~/Documents/budget-2024.txt", text, false)),
		Method: schemas.SourceSynthesized,
	}
}

func TestBrokenCandidatesAreCaughtByTheRightRole(t *testing.T) {
	w, err := newWorker()
	if err != nil {
		t.Fatal(err)
	}
	if who, why := firstRejecter(t, w, renameCandidate()); who != "" {
		t.Fatalf("the valid candidate is rejected by %s: %s", who, why)
	}
	text := "Budget notes\nowner: Alice Martin\nstatus: draft 2\n"
	sheetCSV := tableCSV([][]string{{"Item", "Amount"}, {"Pens", "12"}, {"Tape", "30"}})
	cases := []struct {
		name, role, reason string
		edit               func(c *Candidate)
	}{
		{"unknown getter", RoleRules, `unknown getter "file_text"`, func(c *Candidate) {
			c.Judge = strings.Replace(c.Judge, `"file_content"`, `"file_text"`, 1)
		}},
		{"unknown metric", RoleRules, `unknown metric "equals"`, func(c *Candidate) {
			c.Judge = strings.Replace(c.Judge, `"exact_match"`, `"equals"`, 1)
		}},
		{"bad argument type", RoleRules, "cell", func(c *Candidate) {
			c.Instruction = "In ~/Documents/sales.csv, change the Amount of Pens to 15 and save the file."
			c.App, c.Setup = "sheet", simdesk.BuildSetup(sCreate("~/Documents/sales.csv", sheetCSV))
			c.Judge = judge.Build("and", cr("compare_number", cCell("sheet_cell", "~/Documents/sales.csv", "2B"), gRule(15.0), judge.Options{}))
		}},
		{"code instead of a judge", RoleRules, "never run", func(c *Candidate) {
			c.Judge = "def check(env):\n    return os.path.exists('/home/user/Documents/budget-2024.txt')"
		}},
		{"extra code field", RoleRules, "never run", func(c *Candidate) { c.Extra = []string{"python"} }},
		{"command in the setup", RoleRules, "no commands", func(c *Candidate) {
			c.Setup = `[{"type":"execute","parameters":{"command":"rm -rf ~/Documents"}}]`
		}},
		{"file the setup does not create", RoleRules, "never creates it", func(c *Candidate) { c.Setup = "[]" }},
		{"cell outside the sheet", RoleRules, "outside the 3x2 table", func(c *Candidate) {
			c.Instruction = "In ~/Documents/sales.csv, change the Amount of Pens to 15 and save the file."
			c.App, c.Setup = "sheet", simdesk.BuildSetup(sCreate("~/Documents/sales.csv", sheetCSV))
			c.Judge = judge.Build("and", cr("compare_number", cCell("sheet_cell", "~/Documents/sales.csv", "H40"), gRule(15.0), judge.Options{}))
		}},
		{"wrong expected value", RoleJudger, "does not state", func(c *Candidate) {
			c.Judge = strings.Replace(c.Judge, "draft 2", "draft 3", 1)
		}},
		{"wrong expected number", RoleJudger, "does not state", func(c *Candidate) {
			c.Instruction = "In ~/Documents/sales.csv, change the Amount of Pens to 15 and save the file."
			c.App, c.Setup = "sheet", simdesk.BuildSetup(sCreate("~/Documents/sales.csv", sheetCSV))
			c.Judge = judge.Build("and", cr("compare_number", cCell("sheet_cell", "~/Documents/sales.csv", "B2"), gRule(16.0), judge.Options{}))
		}},
		{"ambiguous instruction", RoleJudger, "ambiguous", func(c *Candidate) {
			c.Instruction = `In the Documents folder, rename "budget-old.txt" to something more current.`
		}},
		{"switch in the wrong direction", RoleJudger, "turns", func(c *Candidate) {
			c.Instruction, c.App, c.Setup = `Turn on "Dark mode" in the Display settings.`, "settings", "[]"
			c.Judge = judge.Build("and", cr("is_false", &judge.Getter{Type: "setting", Key: "display.dark_mode"}, nil, judge.Options{}))
		}},
		{"unreachable goal", RoleChecker, "judge scores 0", func(c *Candidate) {
			crits, _, _ := looseCriteria(c.Judge)
			c.Judge = judge.Build("and", append(crits, cMissing("~/Documents/budget-2024.txt"))...)
		}},
		{"goal already met", RoleChecker, "already scores the untouched state 1", func(c *Candidate) {
			c.Setup = simdesk.BuildSetup(sCreate("~/Documents/budget-2024.txt", text))
			c.Judge = judge.Build("and", cContent("~/Documents/budget-2024.txt", text, false))
			c.Instruction = `Create ~/Documents/budget-2024.txt with the text "Budget notes", "owner: Alice Martin" and "status: draft 2" on three lines.`
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := renameCandidate()
			tc.edit(c)
			who, why := firstRejecter(t, w, c)
			if who != tc.role || !strings.Contains(why, tc.reason) {
				t.Fatalf("rejected by %q (%s), want %s with %q", who, why, tc.role, tc.reason)
			}
		})
	}
}

// plantedCandidate finds a grammar proposal with the flaw planted.
func plantedCandidate(kind string, seed uint64) *Candidate {
	ids := make([]string, 0, len(grammar))
	for id := range grammar {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for k := uint64(0); k < 500; k++ {
		r := rand.New(rand.NewPCG(seed, k))
		id := ids[r.IntN(len(ids))]
		d := grammar[id].gen(r)
		dd := d.clone()
		if !plantFlaw(r, &dd, kind) {
			continue
		}
		app, _, _ := strings.Cut(id, ".")
		return &Candidate{Instruction: dd.instruction, App: app, Setup: simdesk.BuildSetup(dd.setup...), Judge: judge.Build("and", dd.criteria...),
			Abilities: dd.abilities, Method: schemas.SourceSynthesized, Flaw: kind, Meta: map[string]any{"capability": id},
			ref: &reference{setup: simdesk.BuildSetup(d.setup...), judge: judge.Build("and", d.criteria...), conveys: d.conveys}}
	}
	return nil
}

// TestPlantedFlawsAreCaughtAndFixed runs planted flaws through the loop:
// the expected role rejects them first, the fixer repairs most, and what
// is accepted is executable.
func TestPlantedFlawsAreCaughtAndFixed(t *testing.T) {
	want := map[string]string{FlawUnknownGetter: RoleRules, FlawUnknownMetric: RoleRules, FlawBadArgument: RoleRules,
		FlawWrongCell: RoleRules, FlawMissingSetup: RoleRules, FlawWrongValue: RoleJudger, FlawAmbiguous: RoleJudger,
		FlawAlreadyDone: RoleChecker, FlawUnreachable: RoleChecker}
	w, err := newWorker()
	if err != nil {
		t.Fatal(err)
	}
	s := stageFor(DefaultParams())
	for _, kind := range FlawKinds {
		t.Run(kind, func(t *testing.T) {
			fixed, n := 0, 12
			for i := 0; i < n; i++ {
				c := plantedCandidate(kind, uint64(i)+1)
				if c == nil {
					t.Fatal("no draft takes this flaw")
				}
				if who, why := firstRejecter(t, w, c); who != want[kind] {
					t.Fatalf("candidate %d rejected first by %q (%s), want %s\n%s", i, who, why, want[kind], c.JSON())
				}
				it := &item{c: c, candID: fmt.Sprintf("t-%s-%d", kind, i), taskID: "x"}
				s.runItem(context.Background(), w, it)
				last := it.rows[len(it.rows)-1]
				if it.rows[0].Executable {
					t.Errorf("candidate %d: the flawed version counts as executable", i)
				}
				if last.Accepted {
					fixed++
					if !last.Executable || len(it.rows) < 2 || last.Fixes == "[]" {
						t.Errorf("candidate %d accepted without a repair or not executable: %+v", i, last)
					}
				}
			}
			threshold := n * 3 / 4
			if kind == FlawMissingSetup {
				threshold = n / 3 // a sheet whose file is missing cannot be recovered
			}
			t.Logf("fixed %d of %d", fixed, n)
			if fixed < threshold {
				t.Fatalf("fixed %d of %d", fixed, n)
			}
		})
	}
}

func TestAblationsMoveTheExecutableRate(t *testing.T) {
	run := func(without ...string) Summary {
		p := DefaultParams()
		p.Count, p.Workers, p.Seed, p.Without = 60, 4, 11, without
		res, err := Run(context.Background(), Input{}, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			if r.Config != p.Config() {
				t.Fatalf("config %q, want %q", r.Config, p.Config())
			}
		}
		return res.Summary
	}
	full, noJudger, noFixer, noRules := run(), run(RoleJudger), run(RoleFixer), run(RoleRules)
	t.Logf("full %.3f/%.3f, without judger %.3f/%.3f, without fixer %.3f/%.3f, without rules %.3f/%.3f (accepted / final executable rate)",
		full.AcceptedExecutableRate, full.FinalExecutableRate, noJudger.AcceptedExecutableRate, noJudger.FinalExecutableRate,
		noFixer.AcceptedExecutableRate, noFixer.FinalExecutableRate, noRules.AcceptedExecutableRate, noRules.FinalExecutableRate)
	if full.AcceptedExecutableRate < 0.97 || full.FinalExecutableRate < 0.93 {
		t.Errorf("full pipeline: %+v", full)
	}
	if noJudger.AcceptedExecutableRate > full.AcceptedExecutableRate-0.05 {
		t.Errorf("without the judger the accepted executable rate should drop: %.3f vs %.3f", noJudger.AcceptedExecutableRate, full.AcceptedExecutableRate)
	}
	if noFixer.FinalExecutableRate > full.FinalExecutableRate-0.15 || noFixer.AcceptanceRate > full.AcceptanceRate-0.15 {
		t.Errorf("without the fixer fewer candidates end executable: %+v", noFixer)
	}
	if noRules.AcceptedExecutableRate >= full.AcceptedExecutableRate && noRules.CallsPerAccepted <= full.CallsPerAccepted {
		t.Errorf("without the rule validator something should get worse: %+v", noRules)
	}
}

func TestSameSeedSameOutputAnyWorkers(t *testing.T) {
	run := func(workers int) *Result {
		p := DefaultParams()
		p.Count, p.Workers, p.Seed = 30, workers, 5
		res, err := Run(context.Background(), Input{SnapshotID: "abc"}, p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(1), run(8)
	if !reflect.DeepEqual(a.Records, b.Records) || !reflect.DeepEqual(a.Tasks, b.Tasks) {
		t.Fatal("output depends on the number of workers")
	}
	c := run(3)
	if !reflect.DeepEqual(a.Records, c.Records) {
		t.Fatal("output changes between runs")
	}
}

func TestNoDuplicatesOfThePoolOrEachOther(t *testing.T) {
	p := DefaultParams()
	p.Count, p.Workers, p.Seed = 80, 4, 3
	res, err := Run(context.Background(), Input{}, p)
	if err != nil {
		t.Fatal(err)
	}
	instr, specs := map[string]string{}, map[string]string{}
	for _, task := range res.Tasks {
		c := candidateOf(task)
		k, sk := normInstruction(task.Instruction), specKey(c)
		if o := instr[k]; o != "" && task.Source != schemas.SourceSeed {
			t.Errorf("%s repeats the instruction of %s", task.TaskID, o)
		}
		if o := specs[sk]; o != "" && task.Source != schemas.SourceSeed {
			t.Errorf("%s repeats the judge and setup of %s", task.TaskID, o)
		}
		instr[k], specs[sk] = task.TaskID, task.TaskID
	}
	if res.Summary.Dropped["duplicate"] == 0 {
		t.Errorf("no duplicate dropped; the grammar's vocabularies should produce some")
	}
	for _, r := range res.Records {
		if r.Dropped == "duplicate" && (r.Accepted || !strings.Contains(r.RuleReason+r.CheckerReason, "duplicate")) && r.Round == 0 {
			t.Errorf("duplicate row %+v", r)
		}
	}
}

func TestNewIDsContinueAfterExistingOnes(t *testing.T) {
	pool := simdesk.Pool()[:20]
	pool = append(pool, schemas.Task{TaskID: "syn-files-0007", Domain: "files", App: "files", Instruction: "x y z w", Setup: "[]",
		Judge: `{"func":"is_true","result":{"type":"folder_exists","path":"~/Q"}}`, Source: schemas.SourceSynthesized})
	p := DefaultParams()
	p.Count, p.Workers = 5, 2
	res, err := Run(context.Background(), Input{Tasks: pool, Docs: mustDocs(t, "files")}, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range res.Accepted {
		if task.TaskID <= "syn-files-0007" {
			t.Errorf("new id %s does not continue after syn-files-0007", task.TaskID)
		}
	}
}

func mustDocs(t *testing.T, apps ...string) []Doc {
	t.Helper()
	docs, err := SimdeskDocs()
	if err != nil {
		t.Fatal(err)
	}
	var out []Doc
	for _, d := range docs {
		if slices.Contains(apps, d.App) {
			out = append(out, d)
		}
	}
	return out
}

func TestPolicyCheckerThroughTheRolloutInterface(t *testing.T) {
	p := DefaultParams()
	p.Count, p.Workers, p.FlawRate = 4, 2, -1
	p.CheckerPolicy = rollout.Oracle{}
	p.CheckerTreeOnly = true
	res, err := Run(context.Background(), Input{Docs: mustDocs(t, "settings")}, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Accepted) < 4 || !strings.Contains(res.Summary.Config, "checker-policy=oracle") {
		t.Fatalf("accepted %d, config %s", len(res.Accepted), res.Summary.Config)
	}
	for _, r := range res.Records {
		if r.Accepted && r.Calls < 3 {
			t.Errorf("a policy checker's steps count as calls: %+v", r)
		}
	}
}

func TestDocsFromAFolder(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/sheets/only-sort.md", "---\napp: sheet\n---\n# Sorting\nUse `sheet.sort` only.\n")
	writeFile(t, dir+"/gimp.md", "# GIMP\nLayers and filters.\n")
	docs, err := LoadDocs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Name != "docs:gimp.md" || docs[1].App != "sheet" || !reflect.DeepEqual(docs[1].Capabilities(), []string{"sheet.sort"}) {
		t.Fatalf("docs %+v", docs)
	}
	p := DefaultParams()
	p.Count, p.Workers = 3, 2
	res, err := Run(context.Background(), Input{Docs: docs[1:]}, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range res.Accepted {
		if !strings.Contains(task.Judge, "compare_table") || task.Origin != "docs:sheets/only-sort.md" {
			t.Errorf("task %s from the sort-only document: %s", task.TaskID, task.Judge)
		}
	}
	// The builtin proposer knows no GIMP capability: it says so.
	if _, err := Run(context.Background(), Input{Docs: docs[:1]}, p); err == nil || !strings.Contains(err.Error(), "--proposer openai") {
		t.Fatalf("gimp with the builtin proposer: %v", err)
	}
}

func TestResultIsJSONAndSummaryHasCost(t *testing.T) {
	p := DefaultParams()
	p.Count, p.Workers = 6, 2
	res, err := Run(context.Background(), Input{Docs: mustDocs(t, "mail")}, p)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Calls == 0 || s.CallsPerAccepted <= 0 || s.RoleShare[RoleChecker] <= 0 || s.ExecutableRate <= 0 {
		t.Fatalf("summary %+v", s)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Records {
		if !json.Valid([]byte(r.Candidate)) || !json.Valid([]byte(r.Fixes)) {
			t.Fatalf("row %+v", r)
		}
	}
}

func writeFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
