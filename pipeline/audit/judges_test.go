package audit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/audit"
	"github.com/cualake/cualake/schemas"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestJudgesAgreementByHand(t *testing.T) {
	tr := func(id, domain, task, outcome string) schemas.Trajectory {
		return schemas.Trajectory{TrajectoryID: id, Domain: domain, TaskID: task, GroupID: "g", Outcome: outcome}
	}
	trajs := []schemas.Trajectory{
		tr("a1", "chrome", "t", schemas.OutcomeSuccess),    // human success: agree
		tr("a2", "chrome", "t", schemas.OutcomeSuccess),    // human failure: false positive
		tr("a3", "chrome", "t", schemas.OutcomeFailure),    // human success: false negative
		tr("a4", "chrome", "t", schemas.OutcomeIncomplete), // human failure: agree
		tr("b1", "os", "u", schemas.OutcomeSuccess),        // human success: agree
		tr("b2", "os", "u", schemas.OutcomeFailure),        // human failure: agree
		tr("b3", "os", "u", schemas.OutcomeError),          // no judge decision: unjudged
		tr("b4", "", "u", schemas.OutcomeFailure),          // domain from its task (os); human success: false negative
		tr("c1", "os", "u", schemas.OutcomeSuccess),        // not labelled
	}
	tasks := []schemas.Task{{TaskID: "u", Domain: "os"}, {TaskID: "t", Domain: "chrome"}}
	csv := "trajectory_id,human\na1,success\na2,failure\na3,success\na4,failure\nb1,success\nb2,failure\nb3,success\nb4,success\nzz,failure\na1,success\n"
	jsonl := `{"trajectory_id":"a1","human":"success"}
{"trajectory_id":"a2","human":"failure"}
{"trajectory_id":"a3","verdict":"success"}
{"trajectory_id":"a4","human":0}

{"trajectory_id":"b1","label":true}
{"trajectory_id":"b2","human":"failure"}
{"trajectory_id":"b3","human":"success"}
{"trajectory_id":"b4","human":"success"}
{"trajectory_id":"zz","human":"failure"}
`
	for _, file := range []string{writeFile(t, "labels.csv", csv), writeFile(t, "labels.jsonl", jsonl)} {
		labels, err := audit.ReadLabels(file)
		if err != nil {
			t.Fatal(err)
		}
		res, err := audit.JudgesAgreement(trajs, tasks, labels)
		if err != nil {
			t.Fatal(err)
		}
		// chrome: a1..a4; humans valid a1, a3; agree a1, a4; FP a2; FN a3.
		expect(t, res, audit.MetricN, "chrome", 4, 4)
		expect(t, res, audit.MetricHumanValid, "chrome", 0.5, 2)
		expect(t, res, audit.MetricAgreement, "chrome", 0.5, 2)
		expect(t, res, audit.MetricFP, "chrome", 1, 1)
		expect(t, res, audit.MetricFN, "chrome", 1, 1)
		// os: b1, b2, b4; valid b1, b4; agree b1, b2; FN b4.
		expect(t, res, audit.MetricN, "os", 3, 3)
		expect(t, res, audit.MetricHumanValid, "os", 2.0/3, 2)
		expect(t, res, audit.MetricAgreement, "os", 2.0/3, 2)
		expect(t, res, audit.MetricFP, "os", 0, 0)
		fn := expect(t, res, audit.MetricFN, "os", 1, 1)
		var ids struct {
			Trajectories []string `json:"trajectories"`
		}
		breakdown(t, fn, &ids)
		if strings.Join(ids.Trajectories, ",") != "b4" {
			t.Errorf("os false negatives %v", ids.Trajectories)
		}
		expect(t, res, audit.MetricN, "all", 7, 7)
		expect(t, res, audit.MetricHumanValid, "all", 4.0/7, 4)
		expect(t, res, audit.MetricAgreement, "all", 4.0/7, 4)
		expect(t, res, audit.MetricFP, "all", 1, 1)
		expect(t, res, audit.MetricFN, "all", 2, 2)
		expect(t, res, audit.MetricMacroAgreement, "all", (0.5+2.0/3)/2, 2)
		expect(t, res, audit.MetricUnmatchedLabels, "all", 1, 1)
		expect(t, res, audit.MetricUnjudged, "all", 1, 1)
		if !strings.Contains(res.Rows[0].Params, labels.SHA256) {
			t.Errorf("params do not name the labels file's hash: %s", res.Rows[0].Params)
		}
	}
	for name, body := range map[string]string{
		"conflict.csv":   "trajectory_id,human\na1,success\na1,failure\n",
		"badverdict.csv": "trajectory_id,human\na1,maybe\n",
		"nocol.csv":      "id,human\na1,success\n",
		"bad.jsonl":      "{\"trajectory_id\":\"a1\"}\n",
		"empty.csv":      "trajectory_id,human\n",
	} {
		if _, err := audit.ReadLabels(writeFile(t, name, body)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	_, err := audit.ReadLabels(writeFile(t, "line.csv", "trajectory_id,human\na1,success\na2,perhaps\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("the error names the line: %v", err)
	}
}
