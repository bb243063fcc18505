package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// Label is one human verdict on a trajectory.
type Label struct {
	TrajectoryID string
	Success      bool // the human judged the task done
	Line         int  // where it came from in the labels file
}

// Labels is a parsed labels file.
type Labels struct {
	Path   string
	SHA256 string // of the file's bytes, recorded so the audit can be re-run on the same labels
	Items  []Label
}

// humanColumns are the accepted names of the verdict column/field.
var humanColumns = []string{"human", "human_verdict", "verdict", "label"}

func parseVerdict(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "success", "1", "true", "pass", "passed":
		return true, nil
	case "failure", "0", "false", "fail", "failed":
		return false, nil
	}
	return false, fmt.Errorf("verdict %q: want success or failure", s)
}

// ReadLabels reads human labels from a CSV file (a header naming
// trajectory_id and one of human, human_verdict, verdict, label) or a JSONL
// file (one object per line with the same fields). The format follows the
// extension (.csv, .jsonl, .ndjson, .json); otherwise the first byte
// decides ('{' is JSONL). A trajectory labelled twice with different
// verdicts is an error.
func ReadLabels(path string) (*Labels, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--labels: %w", err)
	}
	sum := sha256.Sum256(b)
	ext := strings.ToLower(filepath.Ext(path))
	jsonl := ext == ".jsonl" || ext == ".ndjson" || ext == ".json" ||
		ext != ".csv" && strings.HasPrefix(strings.TrimSpace(string(b)), "{")
	var items []Label
	if jsonl {
		items, err = labelsJSONL(b)
	} else {
		items, err = labelsCSV(b)
	}
	if err != nil {
		return nil, fmt.Errorf("--labels %s: %w", path, err)
	}
	seen := map[string]Label{}
	var out []Label
	for _, l := range items {
		if prev, ok := seen[l.TrajectoryID]; ok {
			if prev.Success != l.Success {
				return nil, fmt.Errorf("--labels %s: trajectory %s is labelled both ways (lines %d and %d)", path, l.TrajectoryID, prev.Line, l.Line)
			}
			continue
		}
		seen[l.TrajectoryID] = l
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--labels %s: no labels", path)
	}
	return &Labels{Path: path, SHA256: hex.EncodeToString(sum[:]), Items: out}, nil
}

func labelsCSV(b []byte) ([]Label, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("csv header: %w", err)
	}
	idCol, vCol := -1, -1
	for i, h := range head {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if h == "trajectory_id" {
			idCol = i
		}
		for _, c := range humanColumns {
			if h == c && vCol < 0 {
				vCol = i
			}
		}
	}
	if idCol < 0 || vCol < 0 {
		return nil, fmt.Errorf("csv header %q: want columns trajectory_id and one of %s", strings.Join(head, ","), strings.Join(humanColumns, ", "))
	}
	var out []Label
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if idCol >= len(rec) || vCol >= len(rec) {
			return nil, fmt.Errorf("line %d: %d fields, want at least %d", line, len(rec), max(idCol, vCol)+1)
		}
		id := strings.TrimSpace(rec[idCol])
		if id == "" {
			return nil, fmt.Errorf("line %d: empty trajectory_id", line)
		}
		ok, err := parseVerdict(rec[vCol])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, Label{TrajectoryID: id, Success: ok, Line: line})
	}
	return out, nil
}

func labelsJSONL(b []byte) ([]Label, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var out []Label
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(t), &obj); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		id, _ := obj["trajectory_id"].(string)
		if id == "" {
			return nil, fmt.Errorf("line %d: want a string field trajectory_id", line)
		}
		var v any
		for _, c := range humanColumns {
			if x, ok := obj[c]; ok {
				v = x
				break
			}
		}
		if v == nil {
			return nil, fmt.Errorf("line %d: want a field %s", line, strings.Join(humanColumns, " or "))
		}
		ok, err := parseVerdict(fmt.Sprint(v))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, Label{TrajectoryID: id, Success: ok, Line: line})
	}
	return out, sc.Err()
}

// Judges metrics.
const (
	MetricN               = "n"
	MetricHumanValid      = "human_valid"
	MetricAgreement       = "agreement"
	MetricFP              = "fp"
	MetricFN              = "fn"
	MetricMacroAgreement  = "macro_agreement"
	MetricUnmatchedLabels = "unmatched_labels"
	MetricUnjudged        = "unjudged"
)

// JudgesAgreement compares the executable judge's decision on each labelled
// trajectory (success when its outcome is success, failure for any other
// outcome but error) with the human label, as ScaleCUA table 6: per domain
// and over all, N, the share humans judged valid, agreement, and false
// positives (judge success, human failure) and false negatives (judge
// failure, human success), listed in the breakdowns. Trajectories that
// ended in error have no judge decision and are counted as unjudged; labels
// naming no trajectory of the snapshot are counted as unmatched.
func JudgesAgreement(trajs []schemas.Trajectory, tasks []schemas.Task, labels *Labels) (*Result, error) {
	part, err := JudgesPart(trajs, tasks, labels, nil)
	if err != nil {
		return nil, err
	}
	return part.Complete()
}

// JudgesPart is the judges audit of the labelled trajectories whose domain
// owns accepts (every one when nil): their per-domain rows, and the
// unmatched and unjudged labels. Part.Complete adds the totals.
func JudgesPart(trajs []schemas.Trajectory, tasks []schemas.Task, labels *Labels, owns func(domain string) bool) (*Part, error) {
	params := map[string]any{"labels": labels.Path, "labels_sha256": labels.SHA256, "labels_count": len(labels.Items),
		"judge_success": "outcome = success"}
	b := newBuilder(KindJudges, params)
	byID := map[string]*schemas.Trajectory{}
	for i := range trajs {
		byID[trajs[i].TrajectoryID] = &trajs[i]
	}
	taskDomain := map[string]string{}
	for _, t := range tasks {
		taskDomain[t.TaskID] = t.Domain
	}
	type tally struct {
		n, valid, agree int64
		fp, fn          []string
	}
	groups := map[string]*tally{}
	var unmatched, unjudged []string
	items := append([]Label(nil), labels.Items...)
	sort.Slice(items, func(a, b int) bool { return items[a].TrajectoryID < items[b].TrajectoryID })
	for _, l := range items {
		tr, ok := byID[l.TrajectoryID]
		if !ok {
			unmatched = append(unmatched, l.TrajectoryID)
			continue
		}
		if tr.Outcome == schemas.OutcomeError {
			unjudged = append(unjudged, l.TrajectoryID)
			continue
		}
		domain := JudgesDomain(tr, taskDomain)
		if owns != nil && !owns(domain) {
			continue
		}
		judge := tr.Outcome == schemas.OutcomeSuccess
		t := groups[domain]
		if t == nil {
			t = &tally{}
			groups[domain] = t
		}
		t.n++
		if l.Success {
			t.valid++
		}
		switch {
		case judge == l.Success:
			t.agree++
		case judge:
			t.fp = append(t.fp, l.TrajectoryID)
		default:
			t.fn = append(t.fn, l.TrajectoryID)
		}
	}
	for _, g := range sortedKeys(groups) {
		t := groups[g]
		b.add(MetricN, g, float64(t.n), t.n, nil)
		b.rate(MetricHumanValid, g, t.valid, t.n, nil)
		b.rate(MetricAgreement, g, t.agree, t.n, nil)
		b.add(MetricFP, g, float64(len(t.fp)), int64(len(t.fp)), ids(t.fp, len(t.fp)))
		b.add(MetricFN, g, float64(len(t.fn)), int64(len(t.fn)), ids(t.fn, len(t.fn)))
	}
	b.add(MetricUnmatchedLabels, GroupAll, float64(len(unmatched)), int64(len(unmatched)), ids(unmatched, len(unmatched)))
	b.add(MetricUnjudged, GroupAll, float64(len(unjudged)), int64(len(unjudged)), ids(unjudged, len(unjudged)))
	return b.part(params)
}

// JudgesDomain is the domain a labelled trajectory counts in: its own, else
// its task's, else "unknown".
func JudgesDomain(tr *schemas.Trajectory, taskDomain map[string]string) string {
	domain := tr.Domain
	if domain == "" {
		domain = taskDomain[tr.TaskID]
	}
	if domain == "" {
		domain = "unknown"
	}
	return domain
}

// ids is the breakdown of a list of trajectory ids (the first MaxListed)
// and how many there are.
func ids(xs []string, total int) map[string]any {
	return map[string]any{"trajectories": listed(xs), "total": total}
}

// idList reads an ids breakdown.
type idList struct {
	Trajectories []string `json:"trajectories"`
	Total        int      `json:"total"`
}

// judgesTotals adds the "all" rows of the judges audit from its per-domain
// rows: sums, the first false positives and negatives of all domains in id
// order, and the macro agreement (mean of the domains' agreement).
func judgesTotals(b *builder, domains map[string]map[string]schemas.Audit) error {
	var n, valid, agree int64
	var macro float64
	count := 0
	lists := map[string][]string{}
	totals := map[string]int{}
	for _, g := range sortedKeys(domains) {
		d := domains[g]
		dn := d[MetricN].Count
		n += dn
		valid += d[MetricHumanValid].Count
		agree += d[MetricAgreement].Count
		if dn > 0 {
			macro += float64(d[MetricAgreement].Count) / float64(dn)
			count++
		}
		for _, m := range []string{MetricFP, MetricFN} {
			var l idList
			if err := json.Unmarshal([]byte(d[m].Breakdown), &l); err != nil {
				return fmt.Errorf("audit judges: %s/%s breakdown: %w", m, g, err)
			}
			lists[m] = append(lists[m], l.Trajectories...)
			totals[m] += l.Total
		}
	}
	b.add(MetricN, GroupAll, float64(n), n, nil)
	b.rate(MetricHumanValid, GroupAll, valid, n, nil)
	b.rate(MetricAgreement, GroupAll, agree, n, nil)
	for _, m := range []string{MetricFP, MetricFN} {
		// Each domain's ids are sorted, and a trajectory is in one domain.
		l := lists[m]
		sort.SliceStable(l, func(a, b int) bool { return l[a] < l[b] })
		b.add(m, GroupAll, float64(totals[m]), int64(totals[m]), ids(l, totals[m]))
	}
	if count > 0 {
		b.add(MetricMacroAgreement, GroupAll, macro/float64(count), int64(count), nil)
	}
	return nil
}
