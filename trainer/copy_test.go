package trainer

import (
	"fmt"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/cualake/cualake/trainer/policy"
)

// TestCopyScoresAreLogProbabilities: the pointer-generator's scores are
// already normalised, so log-softmax leaves them unchanged and every
// caller (sampling, GRPO ratios, KL) can treat them as logits.
func TestCopyScoresAreLogProbabilities(t *testing.T) {
	v, err := policy.NewVocab([]string{"click the save button now"}, policy.VocabOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.New(policy.DefaultConfig(v.VocabSize()), v, gotch.CPU, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in := []policy.Input{{Tokens: v.Encode("click the save button")}, {Tokens: v.Encode("now")}}
	acts := [][]int32{v.Encode("click save"), v.Encode("now now now")}
	lp1, err := p.LogProbs(in, acts, 1)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := p.Logits(in, acts)
	if err != nil {
		t.Fatal(err)
	}
	defer logits.MustDrop()
	sums, err := logits.MustExp(false).SumDimIntlist([]int64{-1}, false, gotch.Float, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums.Float64Values() {
		if s < 0.999 || s > 1.001 {
			t.Fatalf("exp(scores) sums to %v, want 1", s)
		}
	}
	if fmt.Sprint(len(lp1[0]), len(lp1[1])) != "2 3" {
		t.Fatalf("log-probs shapes %d %d", len(lp1[0]), len(lp1[1]))
	}
}
