package trainer

import (
	"os"
	"strconv"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/cualake/cualake/trainer/policy"
)

func TestExp(t *testing.T) {
	lr, _ := strconv.ParseFloat(os.Getenv("LR"), 64)
	ep, _ := strconv.Atoi(os.Getenv("EP"))
	bs, _ := strconv.Atoi(os.Getenv("BS"))
	tasks := synthTasks(64, 1)
	v := synthVocab(t, tasks)
	items := synthItems(v, tasks)
	p, _ := policy.New(policy.DefaultConfig(v.VocabSize()), v, gotch.CPU, 1)
	for e := 0; e < ep; e += 10 {
		ms, err := SFT(p, batchesOf(items, bs), SFTOptions{Epochs: 10, Seed: uint64(e), LR: lr})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("epoch %d loss %.3f acc %.3f em %.3f", e+10, ms[len(ms)-1].Loss, ms[len(ms)-1].TokenAccuracy, exactMatch(t, p, items))
	}
}
