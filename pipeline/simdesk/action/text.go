package action

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// The compact text form is one line per action, the form the RL policy
// emits:
//
//	click 512 300          right_click X Y   middle_click X Y
//	double_click X Y       triple_click X Y  move X Y
//	drag X Y X2 Y2         key enter         key backspace 3
//	hotkey ctrl s          type hello world  scroll down 3
//	scroll up 2 500 400    wait              done              fail
//
// Coordinates are integers on the grid. In "type" the text runs to the end
// of the line, with \n, \t and \\ escaped. Format writes the canonical form
// and Format(Parse(s)) == s for every canonical s.

// Parse reads one action in the compact text form.
func Parse(s string) (schemas.Action, error) {
	line := strings.TrimLeft(s, " \t")
	line = strings.TrimRight(line, "\r\n")
	verb, rest, _ := strings.Cut(line, " ")
	if verb == Type {
		if rest == "" {
			return schemas.Action{}, fmt.Errorf("%w: %q: type needs text", ErrInvalid, s)
		}
		text, err := unescape(rest)
		if err != nil {
			return schemas.Action{}, fmt.Errorf("%w: %q: %v", ErrInvalid, s, err)
		}
		return TypeAction(text), nil
	}
	args := strings.Fields(rest)
	ints := func(n int) ([]int, error) {
		if len(args) != n {
			return nil, fmt.Errorf("%w: %q: %s takes %d numbers", ErrInvalid, s, verb, n)
		}
		out := make([]int, n)
		for i, a := range args {
			v, err := strconv.Atoi(a)
			if err != nil {
				return nil, fmt.Errorf("%w: %q: %q is not an integer", ErrInvalid, s, a)
			}
			out[i] = v
		}
		return out, nil
	}
	var a schemas.Action
	switch verb {
	case Click, RightClick, MiddleClick, DoubleClick, TripleClick, Move:
		v, err := ints(2)
		if err != nil {
			return a, err
		}
		a = At(verb, v[0], v[1])
	case Drag:
		v, err := ints(4)
		if err != nil {
			return a, err
		}
		a = DragAction(v[0], v[1], v[2], v[3])
	case Key:
		if len(args) < 1 || len(args) > 2 {
			return a, fmt.Errorf("%w: %q: key takes a key name and an optional repeat count", ErrInvalid, s)
		}
		n := 0
		if len(args) == 2 {
			v, err := strconv.Atoi(args[1])
			if err != nil || v < 1 {
				return a, fmt.Errorf("%w: %q: repeat count %q", ErrInvalid, s, args[1])
			}
			n = v
		}
		a = schemas.Action{Kind: Key, Keys: []string{args[0]}}
		if n > 1 {
			a.Amount = int32(n)
		}
	case Hotkey:
		if len(args) == 0 {
			return a, fmt.Errorf("%w: %q: hotkey needs keys", ErrInvalid, s)
		}
		a = HotkeyAction(args...)
	case Scroll:
		if len(args) != 2 && len(args) != 4 {
			return a, fmt.Errorf("%w: %q: scroll takes a direction, an amount and an optional X Y", ErrInvalid, s)
		}
		dir := args[0]
		args = args[1:]
		v, err := ints(len(args))
		if err != nil {
			return a, err
		}
		a = ScrollAction(dir, v[0])
		if len(v) == 3 {
			a = ScrollAt(dir, v[0], v[1], v[2])
		}
	case Wait, Done, Fail:
		if len(args) != 0 {
			return a, fmt.Errorf("%w: %q: %s takes no arguments", ErrInvalid, s, verb)
		}
		a = Simple(verb)
	default:
		return a, fmt.Errorf("%w: %q: unknown action %q", ErrInvalid, s, verb)
	}
	if err := Validate(a); err != nil {
		return schemas.Action{}, fmt.Errorf("%q: %w", s, err)
	}
	return a, nil
}

// Format writes an action in the canonical compact text form; invalid
// actions are an error.
func Format(a schemas.Action) (string, error) {
	if err := Validate(a); err != nil {
		return "", err
	}
	switch a.Kind {
	case Click, RightClick, MiddleClick, DoubleClick, TripleClick, Move:
		return fmt.Sprintf("%s %d %d", a.Kind, *a.X, *a.Y), nil
	case Drag:
		if a.X == nil {
			return "", fmt.Errorf("%w: a drag from the mouse position has no compact form", ErrInvalid)
		}
		return fmt.Sprintf("drag %d %d %d %d", *a.X, *a.Y, *a.X2, *a.Y2), nil
	case Key:
		if strings.ContainsAny(a.Keys[0], " \t\n") {
			return "", fmt.Errorf("%w: key %q has no compact form (use its name)", ErrInvalid, a.Keys[0])
		}
		if a.Amount > 1 {
			return fmt.Sprintf("key %s %d", a.Keys[0], a.Amount), nil
		}
		return "key " + a.Keys[0], nil
	case Hotkey:
		for _, k := range a.Keys {
			if strings.ContainsAny(k, " \t\n") {
				return "", fmt.Errorf("%w: key %q has no compact form (use its name)", ErrInvalid, k)
			}
		}
		return "hotkey " + strings.Join(a.Keys, " "), nil
	case Type:
		return "type " + escape(a.Text), nil
	case Scroll:
		if a.X != nil {
			return fmt.Sprintf("scroll %s %d %d %d", a.Direction, a.Amount, *a.X, *a.Y), nil
		}
		return fmt.Sprintf("scroll %s %d", a.Direction, a.Amount), nil
	}
	return a.Kind, nil
}

func escape(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\t", "\\t", "\r", "\\r")
	return r.Replace(s)
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, "\\") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("trailing backslash")
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\':
			b.WriteByte('\\')
		default:
			return "", fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return b.String(), nil
}
