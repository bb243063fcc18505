package simdesk

import (
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
)

// Key is a key press with its modifiers.
type Key struct {
	Name                    string // canonical name (action.NormalizeKey)
	Ctrl, Shift, Alt, Super bool
}

// Combo renders the press for shortcut matching: "ctrl+shift+s". Letters
// fold to lower case when a modifier is held.
func (k Key) Combo() string {
	var b strings.Builder
	if k.Ctrl {
		b.WriteString("ctrl+")
	}
	if k.Alt {
		b.WriteString("alt+")
	}
	if k.Super {
		b.WriteString("super+")
	}
	if k.Shift {
		b.WriteString("shift+")
	}
	name := k.Name
	if k.Ctrl || k.Alt || k.Super || k.Shift {
		name = strings.ToLower(name)
	}
	b.WriteString(name)
	return b.String()
}

// char returns the character a plain (or shifted) single-character key
// types, if any.
func (k Key) char() (string, bool) {
	if k.Ctrl || k.Alt || k.Super {
		return "", false
	}
	if k.Name == "space" {
		return " ", true
	}
	if len([]rune(k.Name)) != 1 {
		return "", false
	}
	if k.Shift {
		return strings.ToUpper(k.Name), true
	}
	return k.Name, true
}

// parseKeys turns a hotkey's key list into one press: every key but the last
// non-modifier is a modifier.
func parseKeys(keys []string) (Key, error) {
	var k Key
	for _, raw := range keys {
		name, err := action.NormalizeKey(raw)
		if err != nil {
			return Key{}, err
		}
		switch name {
		case "ctrl":
			k.Ctrl = true
		case "shift":
			k.Shift = true
		case "alt":
			k.Alt = true
		case "super":
			k.Super = true
		default:
			k.Name = name
		}
	}
	return k, nil
}
