package policy

import (
	"testing"
	"time"

	"github.com/sugarme/gotch"
)

func TestSmoke(t *testing.T) {
	v, err := NewVocab([]string{"open the settings menu", "click OK"}, VocabOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(v.VocabSize(), v.Encode("<|im_start|>user click the OK button at x:123 y:456<|im_end|>"))
	p, err := New(DefaultConfig(v.VocabSize()), v, gotch.CPU, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(p.NumParams())
	in := []Input{{Tokens: v.Encode("click OK")}, {Tokens: v.Encode("open the settings menu now")}}
	t0 := time.Now()
	acts, err := p.Sample(in, DefaultSampleOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Log(time.Since(t0), p.Text(acts[0]), acts[0].Logp, p.Text(acts[1]))
	lp, err := p.LogProbs(in, [][]int32{acts[0].Tokens, acts[1].Tokens}, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(lp[0], lp[1])
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(len(b))
}
