package agent

import (
	"fmt"
	"testing"

	"github.com/cualake/cualake/schemas"
)

// TestVocabMapsInstanceWordsToUnk: words of one or two task instances (file
// names, values) become <unk>, so held-out tasks' new words look to the
// policy as they did in training; words of many tasks and the pointer words
// keep their tokens.
func TestVocabMapsInstanceWordsToUnk(t *testing.T) {
	var demos []Episode
	for i, name := range []string{"zebra", "yak", "walrus", "vole"} {
		demos = append(demos, Episode{Task: schemas.Task{TaskID: fmt.Sprint("t", i),
			Instruction: fmt.Sprintf("Delete the file %q from Downloads.", name+".txt")}})
	}
	// The same task twice must not count twice.
	demos = append(demos, demos[0])
	v, err := BuildVocab(nil, demos, Trees{})
	if err != nil {
		t.Fatal(err)
	}
	for w, want := range map[string]bool{"delete": true, "downloads": true, "txt": true, "zebra": false, "yak": false, "q1": true, "e31": true, "last": true} {
		if _, got := v.TokenID(w); got != want {
			t.Errorf("%q has a token: %v, want %v", w, got, want)
		}
	}
}
