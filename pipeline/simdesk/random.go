package simdesk

import (
	"math/rand/v2"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// randomWords are what the random policy types.
var randomWords = []string{"hello", "report", "2024", "notes.txt", "data", "test", "Alice", "=SUM(A1:A3)", "yes", "42"}

var randomKeys = []string{"enter", "tab", "escape", "backspace", "delete", "up", "down", "left", "right", "f2", "home", "end"}

var randomHotkeys = [][]string{{"ctrl", "s"}, {"ctrl", "a"}, {"ctrl", "o"}, {"ctrl", "n"}, {"ctrl", "v"}, {"ctrl", "c"}, {"ctrl", "x"}, {"ctrl", "z"}}

// RandomPolicy returns a baseline policy that acts at random, seeded: mostly
// clicks (on widgets of the view tree when the simulator is in-process,
// anywhere otherwise), with some typing, keys, scrolls and drags, and a
// small chance of answering done or fail each step.
func RandomPolicy(seed int64) Policy {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	return PolicyFunc(func(o Obs) (schemas.Action, error) {
		point := func() (int, int) {
			if o.Desktop != nil && r.IntN(4) > 0 {
				var ids []*Node
				var walk func(*Node)
				walk = func(n *Node) {
					if n.ID != "" {
						ids = append(ids, n)
					}
					for _, c := range n.Children {
						walk(c)
					}
				}
				walk(o.Desktop.View())
				if len(ids) > 0 {
					n := ids[r.IntN(len(ids))]
					return gridPoint(o.Desktop, n.Center())
				}
			}
			return r.IntN(action.Grid + 1), r.IntN(action.Grid + 1)
		}
		p := r.IntN(1000)
		switch {
		case p < 5:
			return action.Simple(action.Done), nil
		case p < 8:
			return action.Simple(action.Fail), nil
		case p < 450:
			x, y := point()
			return action.At(action.Click, x, y), nil
		case p < 520:
			x, y := point()
			return action.At(action.DoubleClick, x, y), nil
		case p < 560:
			x, y := point()
			return action.At(action.RightClick, x, y), nil
		case p < 700:
			return action.TypeAction(randomWords[r.IntN(len(randomWords))]), nil
		case p < 820:
			return action.KeyAction(randomKeys[r.IntN(len(randomKeys))], 1), nil
		case p < 880:
			return action.HotkeyAction(randomHotkeys[r.IntN(len(randomHotkeys))]...), nil
		case p < 940:
			x, y := point()
			dirs := []string{"up", "down"}
			return action.ScrollAt(dirs[r.IntN(2)], 1+r.IntN(5), x, y), nil
		case p < 970:
			x, y := point()
			x2, y2 := point()
			return action.DragAction(x, y, x2, y2), nil
		}
		return action.Simple(action.Wait), nil
	})
}
