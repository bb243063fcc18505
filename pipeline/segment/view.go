package segment

import (
	"fmt"
	"strings"

	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer/featurize"
)

// View is what a turn shows besides its screenshot, and the language of the
// responses the segmenter has to write itself (steps without response ids).
type View string

const (
	// ViewPlain shows the instruction as written and each turn's screenshot
	// alone; responses without ids are their recorded text.
	ViewPlain View = "plain"
	// ViewPointer is the small policies' view (trainer/featurize): the
	// instruction with word and quote markers ("w3 report q1 w4 ..."), and
	// after each screenshot the step counter and the numbered on-screen
	// elements ("s2 screen e0 button save e1 ..."); responses without ids
	// are the action in the pointer language ("click q1", "type w4 w6"),
	// which resolves against the same screen and instruction. It needs the
	// accessibility tree of every step that has no recorded prompt ids.
	ViewPointer View = "pointer"
)

// Views lists the views in help order.
var Views = []View{ViewPlain, ViewPointer}

func (v View) valid() bool { return v == "" || v == ViewPlain || v == ViewPointer }

// pointer reports whether v renders the screen text.
func (v View) pointer() bool { return v == ViewPointer }

// InstructionText is the instruction as the view's prefix shows it.
func (v View) InstructionText(instruction string) string {
	if v.pointer() {
		return strings.TrimPrefix(featurize.TaskText(instruction), " ")
	}
	return instruction
}

// ScreenText is the text that follows turn step's screenshot in the pointer
// view: the step counter (capped at featurize.MaxStep) and the elements of
// the accessibility tree (the instruction decides which of a crowded
// table's empty cells are listed: featurize.Elements).
func ScreenText(step int32, tree []byte, instruction string) (string, []featurize.Element, error) {
	elems, err := featurize.Elements(tree, instruction)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("s%d", min(int(step), featurize.MaxStep)) + featurize.ScreenText(elems), elems, nil
}

// pointerResponse is the pointer-language text of a turn's actions (one per
// line) for a step recorded without response ids.
func pointerResponse(rows []schemas.Step, elems []featurize.Element, instruction string) string {
	lines := make([]string, len(rows))
	for i := range rows {
		lines[i], _ = featurize.Encode(rows[i].ActionOf(), elems, instruction)
	}
	return strings.Join(lines, "\n")
}
