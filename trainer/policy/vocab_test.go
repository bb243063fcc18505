package policy

import "testing"

func TestVocabPerDocumentAndAlways(t *testing.T) {
	corpus := []string{"open report report report", "open budget", "open notes"}
	v, err := NewVocab(corpus, VocabOptions{MinCount: 2, PerDocument: true, Always: []string{"q1"}})
	if err != nil {
		t.Fatal(err)
	}
	for w, want := range map[string]bool{"open": true, "report": false, "budget": false, "q1": true} {
		if _, got := v.TokenID(w); got != want {
			t.Errorf("%q in vocabulary: %v, want %v (per-document counts)", w, got, want)
		}
	}
	v, err = NewVocab(corpus, VocabOptions{MinCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.TokenID("report"); !ok {
		t.Error("per-occurrence counts should keep a word repeated in one document")
	}
}
