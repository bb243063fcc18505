package stage

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer"
	"github.com/cualake/cualake/trainer/agent"
	"github.com/cualake/cualake/trainer/causal"
)

var testSP = causal.Special{ImStart: 100, ImEnd: 101, VisionStart: 102, VisionEnd: 103, ImagePad: 104}

// testRow is a segments row with one screenshot of n pads and one trained
// token.
func testRow(id string, n int) schemas.Segment {
	ids := []int32{testSP.ImStart, 5, testSP.VisionStart}
	for i := 0; i < n; i++ {
		ids = append(ids, testSP.ImagePad)
	}
	ids = append(ids, testSP.VisionEnd, testSP.ImEnd, testSP.ImStart, 7, testSP.ImEnd)
	mask := make([]int8, len(ids))
	lp := make([]float32, len(ids))
	mask[len(ids)-2], lp[len(ids)-2] = 1, -0.5
	return schemas.Segment{SegmentID: id + "/window/0000", TrajectoryID: id, GroupID: "g", InputIDs: ids, LossMask: mask, Logprobs: lp,
		HasLogprobs: true, Images: 1, ImageBlobs: []string{"png-" + id}, Tokens: int32(len(ids)), TrainableTokens: 1, Advantage: 0.5,
		Tokenizer: "qwen@sha256:1"}
}

// TestCheckSegmentsNamesTheSegment: rows cut with another tokenizer, with
// lengths that disagree, with screenshots of another size than the model
// reads or without their blobs are errors naming the segment.
func TestCheckSegmentsNamesTheSegment(t *testing.T) {
	cfg := causal.DefaultConfig(10) // 8 image tokens
	good := testRow("r1", 8)
	if err := checkSegments([]schemas.Segment{good}, "qwen@sha256:1", cfg, testSP); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(r *schemas.Segment){
		"was cut with tokenizer":    func(r *schemas.Segment) { r.Tokenizer = "other@sha256:2" },
		"have lengths":              func(r *schemas.Segment) { r.LossMask = r.LossMask[1:] },
		"the causal policy reads 8": func(r *schemas.Segment) { *r = testRow("r2", 4) },
		"names 0 screenshot blobs":  func(r *schemas.Segment) { r.ImageBlobs = nil },
		"was never recorded":        func(r *schemas.Segment) { r.ImageBlobs = []string{""} },
	}
	for want, edit := range cases {
		r := testRow("r2", 8)
		edit(&r)
		err := checkSegments([]schemas.Segment{good, r}, "qwen@sha256:1", cfg, testSP)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `segment "r2/window/0000"`) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// TestCompleteGroups: a kept rollout of a group without segments is an
// error naming a segment of that group; rollouts without steps need none.
func TestCompleteGroups(t *testing.T) {
	kept := []schemas.Trajectory{{TrajectoryID: "r1", GroupID: "g", Steps: 3}, {TrajectoryID: "r2", GroupID: "g", Steps: 2},
		{TrajectoryID: "r3", GroupID: "g", Steps: 0}}
	rows := []schemas.Segment{testRow("r1", 8)}
	err := completeGroups(kept, rows)
	if err == nil || !strings.Contains(err.Error(), `segment "r1/window/0000"`) || !strings.Contains(err.Error(), "rollout r2 has no segments") {
		t.Fatalf("incomplete group: %v", err)
	}
	if err := completeGroups(kept, append(rows, testRow("r2", 8))); err != nil {
		t.Fatalf("complete group: %v", err)
	}
}

// TestItemFromSegmentIsTheRow: the item train consumes is the segments row
// as it stands (ids, mask, log-probabilities, advantage, group), with the
// patches of the blobs it names, in order.
func TestItemFromSegmentIsTheRow(t *testing.T) {
	r := testRow("r1", 8)
	r.ImageBlobs = []string{"a"}
	pc := patchCache{"a": {{1, 2}}, "b": {{3}}}
	it := ItemFromSegment(&r, pc)
	if !slices.Equal(it.IDs, r.InputIDs) || !slices.Equal(it.Mask, r.LossMask) || !slices.Equal(it.Logp, r.Logprobs) ||
		it.Advantage != float32(r.Advantage) || it.Group != r.GroupID || it.ID != r.SegmentID || !it.HasLogp {
		t.Fatalf("item %+v is not row %+v", it, r)
	}
	if len(it.Images) != 1 || it.Images[0][0][1] != 2 {
		t.Fatalf("images %v", it.Images)
	}
	if got := it.Trainable(); !slices.Equal(got, []int{len(r.InputIDs) - 2}) {
		t.Fatalf("trainable positions %v", got)
	}
}

// TestBuildIDMapKeepsTrainedAndCommonTokens: trained tokens and the
// template always get an id, context tokens only when MinTasks tasks show
// them.
func TestBuildIDMapKeepsTrainedAndCommonTokens(t *testing.T) {
	var rows []schemas.Segment
	for i, task := range []string{"a", "b", "c"} {
		r := testRow("r"+task, 8)
		r.TaskID = task
		// token 5 is context in all three tasks, token 9 in one only
		if i == 0 {
			r.InputIDs[len(r.InputIDs)-3] = 9
		}
		rows = append(rows, r)
	}
	im, err := buildIDMap(rows, testSP)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{100, 101, 102, 103, 104, 7} {
		if !im.Known(id) {
			t.Errorf("id %d missing", id)
		}
	}
	if !im.Known(5) {
		t.Error("a context token of 3 tasks has no id")
	}
	if im.Known(9) {
		t.Error("a context token of 1 task got an id")
	}
}

// TestCosineLR: the warm start's rate climbs to the peak over the first
// 5% of the steps, then falls monotonically to a tenth of it.
func TestCosineLR(t *testing.T) {
	const peak, n = 0.01, 200
	if got := cosineLR(peak, 0, n); math.Abs(got-peak/10) > 1e-12 {
		t.Fatalf("step 0: %v, want peak/10 (1 of 10 warm-up steps)", got)
	}
	if got := cosineLR(peak, 9, n); math.Abs(got-peak) > 1e-12 {
		t.Fatalf("last warm-up step: %v, want the peak %v", got, peak)
	}
	prev := peak
	for s := 10; s < n; s++ {
		got := cosineLR(peak, s, n)
		if got > prev+1e-15 || got < peak/10-1e-15 {
			t.Fatalf("step %d: %v after %v: want non-increasing and >= %v", s, got, prev, peak/10)
		}
		prev = got
	}
	if prev > peak/10*1.01 {
		t.Fatalf("last step: %v, want about %v", prev, peak/10)
	}
	if got := cosineLR(peak, 0, 1); got != peak {
		t.Fatalf("a single step: %v, want the peak", got)
	}
}

// TestEncDecRemoved: the encoder-decoder policy name is refused with the
// removal message, and so is one of its old checkpoints, named by version
// and blob; other bytes are refused naming the checkpoint too.
func TestEncDecRemoved(t *testing.T) {
	if err := CheckPolicy(PolicyCausal); err != nil {
		t.Fatal(err)
	}
	err := CheckPolicy("encdec")
	if !errors.Is(err, ErrEncDecRemoved) {
		t.Fatalf("encdec: %v, want ErrEncDecRemoved", err)
	}
	for _, want := range []string{"encoder-decoder", "removed", "7878f89", "causal"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("encdec: %q lacks %q", err, want)
		}
	}
	if err := CheckPolicy("lstm"); err == nil || errors.Is(err, ErrEncDecRemoved) || !strings.Contains(err.Error(), "lstm") {
		t.Errorf("lstm: %v", err)
	}
	ck := &schemas.Checkpoint{Version: 3, Blob: "0123456789abcdef0123"}
	old := append([]byte("cualake-policy\x00"), 1, 0, 0, 0, '{', '}')
	err = CheckCheckpoint(ck, old)
	if !errors.Is(err, ErrEncDecRemoved) || !strings.Contains(err.Error(), "checkpoint v3") || !strings.Contains(err.Error(), "0123456789ab") {
		t.Fatalf("old encoder-decoder checkpoint: %v", err)
	}
	if _, err := loadCausalBytes(old, ck, "cpu"); !errors.Is(err, ErrEncDecRemoved) {
		t.Fatalf("loading an old encoder-decoder checkpoint: %v", err)
	}
	err = CheckCheckpoint(ck, []byte("junk"))
	if err == nil || errors.Is(err, ErrEncDecRemoved) || !strings.Contains(err.Error(), "checkpoint v3") {
		t.Fatalf("junk checkpoint: %v", err)
	}
}

// TestLossAggregationByAdvantage: STEPO and naive step-level GRPO share
// eq. 13's aggregation (token mean per item, summed), so the stepo.yaml
// comparison differs only in the advantage a step carries; grpo keeps the
// batch token mean. With naive on grpo's aggregation the two variants were
// one computation (identical rows in the vcs lake, seed 1).
func TestLossAggregationByAdvantage(t *testing.T) {
	for adv, want := range map[string]trainer.Aggregation{
		agent.AdvSTEPO: trainer.ItemSumTokenMean,
		agent.AdvNaive: trainer.ItemSumTokenMean,
		agent.AdvGRPO:  trainer.TokenMean,
	} {
		if got := lossAggregation(adv); got != want {
			t.Errorf("advantage %s: aggregation %s, want %s", adv, got, want)
		}
	}
}
