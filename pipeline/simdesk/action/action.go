// Package action is the ScaleCUA/OSWorld action space of the simulator as
// typed schemas.Action values: constructors, validation, the mapping between
// the 1000x1000 action grid and screen pixels, key names, the compact text
// form the RL policy emits (Parse/Format), pyautogui command strings
// (ParsePyAutoGUI/FormatPyAutoGUI, and ParsePyAutoGUISteps for the actions
// a trajectory records for a logged script) and OSWorld's computer_13
// action dictionaries (ParseComputer13). The importers and the simulator
// share this one reading of pyautogui.
package action

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cualake/cualake/schemas"
)

// Grid is the side of the square action grid; coordinates run 0..Grid.
const Grid = 1000

// Kinds of actions.
const (
	Click       = "click"
	RightClick  = "right_click"
	MiddleClick = "middle_click"
	DoubleClick = "double_click"
	TripleClick = "triple_click"
	Drag        = "drag"
	Move        = "move"
	Key         = "key"
	Hotkey      = "hotkey"
	Type        = "type"
	Scroll      = "scroll"
	Wait        = "wait"
	Done        = "done"
	Fail        = "fail"
)

// Kinds lists the action kinds in a fixed order.
var Kinds = []string{Click, RightClick, MiddleClick, DoubleClick, TripleClick, Drag, Move, Key, Hotkey, Type, Scroll, Wait, Done, Fail}

// MaxText bounds typed text and MaxRepeat key repeats and scroll amounts, so
// that no single action can stall the simulator.
const (
	MaxText   = 4096
	MaxRepeat = 100
)

// ErrInvalid marks an action the environment refuses (and records as a
// no-op).
var ErrInvalid = errors.New("invalid action")

func i32(v int) *int32 { x := int32(v); return &x }

// At returns an action of a pointer kind at grid point (x, y).
func At(kind string, x, y int) schemas.Action {
	return schemas.Action{Kind: kind, X: i32(x), Y: i32(y)}
}

// DragAction returns a drag from (x, y) to (x2, y2) on the grid.
func DragAction(x, y, x2, y2 int) schemas.Action {
	return schemas.Action{Kind: Drag, X: i32(x), Y: i32(y), X2: i32(x2), Y2: i32(y2)}
}

// KeyAction returns a key press repeated n times (n <= 1 means once).
func KeyAction(key string, n int) schemas.Action {
	a := schemas.Action{Kind: Key, Keys: []string{key}}
	if n > 1 {
		a.Amount = int32(n)
	}
	return a
}

// HotkeyAction returns a key combination such as ctrl+s.
func HotkeyAction(keys ...string) schemas.Action {
	return schemas.Action{Kind: Hotkey, Keys: append([]string(nil), keys...)}
}

// TypeAction returns typing text.
func TypeAction(text string) schemas.Action { return schemas.Action{Kind: Type, Text: text} }

// ScrollAction returns a scroll of n notches in direction dir at the mouse
// position.
func ScrollAction(dir string, n int) schemas.Action {
	return schemas.Action{Kind: Scroll, Direction: dir, Amount: int32(n)}
}

// ScrollAt returns a scroll of n notches in direction dir at grid (x, y).
func ScrollAt(dir string, n, x, y int) schemas.Action {
	return schemas.Action{Kind: Scroll, Direction: dir, Amount: int32(n), X: i32(x), Y: i32(y)}
}

// Simple returns an action without arguments (wait, done, fail).
func Simple(kind string) schemas.Action { return schemas.Action{Kind: kind} }

// ToPixel maps a grid coordinate to a pixel on a screen side of size px.
// The simulator, the server and the client all use this one mapping.
func ToPixel(g, size int) int {
	p := g * size / Grid
	return min(max(p, 0), size-1)
}

// ToGrid maps a pixel to the smallest grid coordinate whose ToPixel is at
// least p, so that ToPixel(ToGrid(p)) == p whenever the screen side is at
// most Grid pixels, and is within one pixel otherwise.
func ToGrid(p, size int) int {
	if size <= 0 {
		return 0
	}
	g := (p*Grid + size - 1) / size
	return min(max(g, 0), Grid)
}

func pointer(kind string) bool {
	switch kind {
	case Click, RightClick, MiddleClick, DoubleClick, TripleClick, Move, Drag:
		return true
	}
	return false
}

func checkCoord(name string, v *int32) error {
	if v == nil {
		return fmt.Errorf("%w: missing coordinate %s", ErrInvalid, name)
	}
	if *v < 0 || *v > Grid {
		return fmt.Errorf("%w: coordinate %s=%d is off-screen (grid is 0..%d)", ErrInvalid, name, *v, Grid)
	}
	return nil
}

// Validate checks an action against the action space: known kind, required
// coordinates on the grid, known keys, bounded text and amounts.
func Validate(a schemas.Action) error {
	if !slices.Contains(Kinds, a.Kind) {
		return fmt.Errorf("%w: unknown kind %q", ErrInvalid, a.Kind)
	}
	if pointer(a.Kind) {
		// A drag may start at the current mouse position (pyautogui.dragTo).
		if a.Kind != Drag || a.X != nil || a.Y != nil {
			if err := checkCoord("x", a.X); err != nil {
				return err
			}
			if err := checkCoord("y", a.Y); err != nil {
				return err
			}
		}
	}
	switch a.Kind {
	case Drag:
		if err := checkCoord("x2", a.X2); err != nil {
			return err
		}
		if err := checkCoord("y2", a.Y2); err != nil {
			return err
		}
	case Key:
		if len(a.Keys) != 1 {
			return fmt.Errorf("%w: key needs exactly one key, got %d", ErrInvalid, len(a.Keys))
		}
		if _, err := NormalizeKey(a.Keys[0]); err != nil {
			return err
		}
		if a.Amount < 0 || a.Amount > MaxRepeat {
			return fmt.Errorf("%w: key repeat %d outside 0..%d", ErrInvalid, a.Amount, MaxRepeat)
		}
	case Hotkey:
		if len(a.Keys) < 1 || len(a.Keys) > 4 {
			return fmt.Errorf("%w: hotkey needs 1 to 4 keys, got %d", ErrInvalid, len(a.Keys))
		}
		for _, k := range a.Keys {
			if _, err := NormalizeKey(k); err != nil {
				return err
			}
		}
	case Type:
		if a.Text == "" {
			return fmt.Errorf("%w: type needs text", ErrInvalid)
		}
		if len(a.Text) > MaxText {
			return fmt.Errorf("%w: text of %d bytes exceeds %d", ErrInvalid, len(a.Text), MaxText)
		}
	case Scroll:
		switch a.Direction {
		case "up", "down", "left", "right":
		default:
			return fmt.Errorf("%w: scroll direction %q (want up, down, left or right)", ErrInvalid, a.Direction)
		}
		if a.Amount < 1 || a.Amount > MaxRepeat {
			return fmt.Errorf("%w: scroll amount %d outside 1..%d", ErrInvalid, a.Amount, MaxRepeat)
		}
		if a.X != nil || a.Y != nil {
			if err := checkCoord("x", a.X); err != nil {
				return err
			}
			if err := checkCoord("y", a.Y); err != nil {
				return err
			}
		}
	}
	return nil
}
