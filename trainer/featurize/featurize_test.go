package featurize

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
)

// TestOracleActionsRoundTrip replays the oracle on every built-in task and
// checks that its actions have an exact policy form almost always, and that
// the form decodes back to the same action.
func TestOracleActionsRoundTrip(t *testing.T) {
	sim, err := simdesk.NewSim(simdesk.Options{TreeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	total, exact, maxCtx := 0, 0, 0
	var misses []string
	for _, task := range simdesk.Pool() {
		obs, err := sim.Reset(task, 1)
		if err != nil {
			t.Fatal(err)
		}
		pol, err := simdesk.Oracle(task)
		if err != nil {
			t.Fatal(err)
		}
		var hist []string
		for !obs.Done && obs.Step < 60 {
			a, err := pol.Next(obs)
			if err != nil {
				t.Fatal(err)
			}
			elems, err := Elements(obs.Tree)
			if err != nil {
				t.Fatal(err)
			}
			ctx := Context(task.Instruction, elems, hist)
			maxCtx = max(maxCtx, len(strings.Fields(ctx)))
			text, ok := Encode(a, elems, task.Instruction)
			total++
			if ok {
				exact++
				back := Decode(text, elems, task.Instruction)
				if a.Kind == "key" && a.Amount == 0 {
					back.Amount = 0
				}
				if !reflect.DeepEqual(back, a) {
					t.Fatalf("%s: %+v -> %q -> %+v", task.TaskID, a, text, back)
				}
			} else if len(misses) < 10 {
				misses = append(misses, task.TaskID+": "+text)
			}
			hist = append(hist, text)
			if len(hist) > 3 {
				hist = hist[1:]
			}
			if obs, err = sim.Step(a); err != nil {
				t.Fatal(err)
			}
		}
	}
	rate := float64(exact) / float64(total)
	t.Logf("%d oracle actions, %.1f%% with an exact policy form; longest context %d words; misses: %v", total, 100*rate, maxCtx, misses)
	if rate < 0.9 {
		t.Fatalf("only %.1f%% of oracle actions have an exact policy form", 100*rate)
	}
}

func TestDecodeGarbage(t *testing.T) {
	for _, s := range []string{"", "click", "click e99", "type w9 w2", "drag e0", "scroll down x", "hotkey ctrl", "fly away"} {
		if a := Decode(s, []Element{{X: 1, Y: 2}}, "a b"); a.Kind != "unknown" {
			t.Errorf("%q decoded to %+v", s, a)
		}
	}
}
