package audit

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/cualake/cualake/schemas"
)

// DefaultThreshold is the near-duplicate similarity threshold (ScaleCUA
// appendix B.6).
const DefaultThreshold = 0.90

// Overlap metrics.
const (
	MetricTrainTasks     = "train_tasks"
	MetricEvalTasks      = "eval_tasks"
	MetricExactJSON      = "exact_json_dup"
	MetricInstructionDup = "instruction_dup"
	MetricNearDup        = "near_dup"
	MetricJudgeReuse     = "judge_reuse"
)

// Pair is one offending (training task, evaluation task) pair.
type Pair struct {
	Train       string   `json:"train"`
	Eval        string   `json:"eval"`
	TrainDomain string   `json:"train_domain"`
	EvalDomain  string   `json:"eval_domain"`
	Similarity  *float64 `json:"similarity,omitempty"`
	TrainText   string   `json:"train_instruction,omitempty"`
	EvalText    string   `json:"eval_instruction,omitempty"`
	JudgeFunc   string   `json:"judge_func,omitempty"`
}

// pairList is a breakdown: the pairs (at most MaxListed) and how many.
type pairList struct {
	Pairs     []Pair `json:"pairs"`
	Total     int    `json:"pairs_total"`
	Truncated bool   `json:"truncated"`
}

// trivialJudge: an absent judge is not "reused".
func trivialJudge(canon string) bool {
	switch canon {
	case "null", "{}", "[]", `""`:
		return true
	}
	return false
}

func key(parts ...string) [32]byte {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

// fullJSONKey identifies a task by the canonical JSON of instruction,
// setup and judge.
func fullJSONKey(it Item) [32]byte {
	b, _ := json.Marshal(it.Instruction)
	return key(`{"instruction":` + string(b) + `,"judge":` + CanonicalJSON(it.Judge) + `,"setup":` + CanonicalJSON(it.Setup) + `}`)
}

func judgeFunc(canon string) string {
	var j struct {
		Func any `json:"func"`
	}
	if json.Unmarshal([]byte(canon), &j) != nil || j.Func == nil {
		return ""
	}
	if s, ok := j.Func.(string); ok {
		return s
	}
	b, _ := json.Marshal(j.Func)
	return string(b)
}

func clipText(s string) string {
	r := []rune(s)
	if len(r) > 160 {
		return string(r[:159]) + "…"
	}
	return s
}

func round4(f float64) *float64 {
	v := math.Round(f*1e4) / 1e4
	return &v
}

// OverlapPools audits a training pool against an evaluation pool. For every
// training task it asks whether some evaluation task is an exact full-JSON
// duplicate, has the same normalised instruction, is a near-duplicate
// (composite similarity >= threshold, which includes the two above) or
// reuses its judge exactly (empty judges excluded). Rates are the share of
// training tasks flagged, per training domain and over all; the offending
// pairs are the breakdown.
func OverlapPools(train, eval Pool, threshold float64) (*Result, error) {
	part, err := OverlapPart(train, eval, threshold, nil)
	if err != nil {
		return nil, err
	}
	return part.Complete()
}

// overlapMetrics are the per-task flags of the overlap audit.
var overlapMetrics = []string{MetricExactJSON, MetricInstructionDup, MetricNearDup, MetricJudgeReuse}

// OverlapPart is the overlap audit of the training tasks whose domain owns
// accepts (every one when nil): their per-domain rows, and the evaluation
// pool's row. Part.Complete adds the totals over all domains.
func OverlapPart(train, eval Pool, threshold float64, owns func(domain string) bool) (*Part, error) {
	if threshold <= 0.5 || threshold > 1 {
		return nil, fmt.Errorf("overlap: threshold %v: want a value in (0.5, 1]", threshold)
	}
	params := map[string]any{
		"train": train.Desc, "eval": eval.Desc, "threshold": threshold,
		"similarity":    "0.5*jaccard(word sets) + 0.5*cosine(char 3-gram counts) of normalised instructions",
		"normalization": "lowercase; letters and digits kept; . and , kept between digits; other characters to spaces; spaces collapsed",
	}
	b := newBuilder(KindOverlap, params)
	train.Items, eval.Items = byID(train.Items), byID(eval.Items)
	if owns != nil {
		var mine []Item
		for _, it := range train.Items {
			if owns(it.Domain) {
				mine = append(mine, it)
			}
		}
		train.Items = mine
	}

	exact := map[[32]byte][]int{}
	instr := map[string][]int{}
	judges := map[string][]int{}
	evalNorm := make([]string, len(eval.Items))
	evalDomains := map[string]int{}
	for j, it := range eval.Items {
		evalDomains[it.Domain]++
		exact[fullJSONKey(it)] = append(exact[fullJSONKey(it)], j)
		evalNorm[j] = NormalizeInstruction(it.Instruction)
		if evalNorm[j] != "" {
			instr[evalNorm[j]] = append(instr[evalNorm[j]], j)
		}
		if c := CanonicalJSON(it.Judge); !trivialJudge(c) {
			judges[c] = append(judges[c], j)
		}
	}
	trainNorm := make([]string, len(train.Items))
	for i, it := range train.Items {
		trainNorm[i] = NormalizeInstruction(it.Instruction)
	}
	near := map[int][]match{}
	for _, m := range nearDuplicates(trainNorm, evalNorm, threshold) {
		near[m.train] = append(near[m.train], m)
	}

	type tally struct {
		n       int64
		flagged map[string]int64
		pairs   map[string][]Pair
	}
	groups := map[string]*tally{}
	get := func(g string) *tally {
		if groups[g] == nil {
			groups[g] = &tally{flagged: map[string]int64{}, pairs: map[string][]Pair{}}
		}
		return groups[g]
	}
	for i, it := range train.Items {
		found := map[string][]Pair{}
		pair := func(j int) Pair {
			return Pair{Train: it.ID, Eval: eval.Items[j].ID, TrainDomain: it.Domain, EvalDomain: eval.Items[j].Domain}
		}
		for _, j := range exact[fullJSONKey(it)] {
			found[MetricExactJSON] = append(found[MetricExactJSON], pair(j))
		}
		if trainNorm[i] != "" {
			for _, j := range instr[trainNorm[i]] {
				p := pair(j)
				p.TrainText, p.EvalText = clipText(it.Instruction), clipText(eval.Items[j].Instruction)
				found[MetricInstructionDup] = append(found[MetricInstructionDup], p)
			}
		}
		for _, m := range near[i] {
			p := pair(m.eval)
			p.Similarity = round4(m.sim)
			p.TrainText, p.EvalText = clipText(it.Instruction), clipText(eval.Items[m.eval].Instruction)
			found[MetricNearDup] = append(found[MetricNearDup], p)
		}
		if c := CanonicalJSON(it.Judge); !trivialJudge(c) {
			for _, j := range judges[c] {
				p := pair(j)
				p.JudgeFunc = judgeFunc(c)
				found[MetricJudgeReuse] = append(found[MetricJudgeReuse], p)
			}
		}
		t := get(it.Domain)
		t.n++
		for _, metric := range overlapMetrics {
			if ps := found[metric]; len(ps) > 0 {
				t.flagged[metric]++
				t.pairs[metric] = append(t.pairs[metric], ps...)
			}
		}
	}
	for _, g := range sortedKeys(groups) {
		t := groups[g]
		b.add(MetricTrainTasks, g, float64(t.n), t.n, nil)
		for _, metric := range overlapMetrics {
			ps := t.pairs[metric]
			b.rate(metric, g, t.flagged[metric], t.n, pairList{Pairs: listed(ps), Total: len(ps), Truncated: len(ps) > MaxListed})
		}
	}
	b.add(MetricEvalTasks, GroupAll, float64(len(eval.Items)), int64(len(eval.Items)), map[string]any{"domains": evalDomains})
	return b.part(params)
}

// overlapTotals adds the "all" rows of the overlap audit from its
// per-domain rows: sums, and the first pairs of all domains in training
// task order (each domain lists its first MaxListed, enough for that).
func overlapTotals(b *builder, domains map[string]map[string]schemas.Audit) error {
	var n int64
	for _, d := range domains {
		n += d[MetricTrainTasks].Count
	}
	b.add(MetricTrainTasks, GroupAll, float64(n), n, nil)
	for _, metric := range overlapMetrics {
		var flagged int64
		var all []Pair
		total := 0
		for _, g := range sortedKeys(domains) {
			r, ok := domains[g][metric]
			if !ok {
				continue
			}
			var pl pairList
			if err := json.Unmarshal([]byte(r.Breakdown), &pl); err != nil {
				return fmt.Errorf("audit overlap: %s/%s breakdown: %w", metric, g, err)
			}
			flagged += r.Count
			total += pl.Total
			all = append(all, pl.Pairs...)
		}
		// Each domain's pairs are in training task order, and a task is in
		// one domain: a stable sort by task id merges them.
		sort.SliceStable(all, func(a, b int) bool { return all[a].Train < all[b].Train })
		b.rate(metric, GroupAll, flagged, n, pairList{Pairs: listed(all), Total: total, Truncated: total > MaxListed})
	}
	return nil
}

// byID returns items sorted by id, so results do not depend on the order
// tasks were read in.
func byID(items []Item) []Item {
	out := append([]Item(nil), items...)
	sort.SliceStable(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}
