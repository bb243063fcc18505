package osworld

import (
	"encoding/json"
	"errors"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// DefaultWidth and DefaultHeight are OSWorld's screen size, which pixel
// coordinates refer to when no screenshot tells the real one.
const (
	DefaultWidth  = 1920
	DefaultHeight = 1080
)

// errNoAction is a script that performs nothing (only imports, comments or
// held keys).
var errNoAction = errors.New("no action in script")

// ParseActionText translates an action logged as text, a pyautogui script
// or DONE, FAIL or WAIT, on a screen of width x height pixels (OSWorld's
// when unknown), into the actions it performed, in order
// (action.ParsePyAutoGUISteps: the simulator's reading of pyautogui, folded
// to the fewest actions with the same effect). A script that does not
// parse, or performs nothing, is an error; importers keep it as one step of
// kind "unknown" with its text in raw_action.
func ParseActionText(s string, width, height int) ([]schemas.Action, error) {
	if width <= 0 || height <= 0 {
		width, height = DefaultWidth, DefaultHeight
	}
	acts, err := action.ParsePyAutoGUISteps(s, action.Screen{Width: width, Height: height})
	if err != nil {
		return nil, err
	}
	if len(acts) == 0 {
		return nil, errNoAction
	}
	return acts, nil
}

// ParseAction translates the action field of a traj.jsonl line: a string
// (ParseActionText) or a computer_13 object (action.ParseComputer13, one
// action).
func ParseAction(a json.RawMessage, width, height int) ([]schemas.Action, error) {
	var s string
	if json.Unmarshal(a, &s) == nil {
		return ParseActionText(s, width, height)
	}
	if !isObject(a) {
		return nil, errNoAction
	}
	if width <= 0 || height <= 0 {
		width, height = DefaultWidth, DefaultHeight
	}
	act, err := action.ParseComputer13(a, action.Screen{Width: width, Height: height})
	if err != nil {
		return nil, err
	}
	return []schemas.Action{act}, nil
}
