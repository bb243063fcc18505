package action

import (
	"fmt"
	"strings"
)

// keyAliases maps pyautogui and xdotool spellings to canonical key names.
var keyAliases = map[string]string{
	"return": "enter", "\n": "enter", "\r": "enter", "kp_enter": "enter",
	"esc": "escape", "del": "delete", "\t": "tab", " ": "space", "spacebar": "space",
	"pgup": "pageup", "page_up": "pageup", "prior": "pageup",
	"pgdn": "pagedown", "page_down": "pagedown", "next": "pagedown",
	"control": "ctrl", "ctrlleft": "ctrl", "ctrlright": "ctrl", "control_l": "ctrl", "control_r": "ctrl",
	"shiftleft": "shift", "shiftright": "shift", "shift_l": "shift", "shift_r": "shift",
	"altleft": "alt", "altright": "alt", "alt_l": "alt", "alt_r": "alt", "option": "alt", "optionleft": "alt", "optionright": "alt",
	"win": "super", "winleft": "super", "winright": "super", "command": "super", "cmd": "super", "meta": "super", "super_l": "super",
	"arrowup": "up", "arrowdown": "down", "arrowleft": "left", "arrowright": "right",
	"back": "backspace", "bksp": "backspace",
}

// namedKeys are the multi-letter key names the simulator knows. Keys that
// exist on keyboards but do nothing in the simulator (capslock, insert,
// volume...) are still valid, so pressing them is a no-op, not an error.
var namedKeys = map[string]bool{
	"enter": true, "tab": true, "backspace": true, "delete": true, "escape": true, "space": true,
	"up": true, "down": true, "left": true, "right": true, "home": true, "end": true,
	"pageup": true, "pagedown": true, "ctrl": true, "shift": true, "alt": true, "super": true,
	"insert": true, "capslock": true, "numlock": true, "scrolllock": true, "printscreen": true, "prntscrn": true,
	"pause": true, "menu": true, "apps": true, "fn": true,
	"volumeup": true, "volumedown": true, "volumemute": true, "playpause": true,
	"f1": true, "f2": true, "f3": true, "f4": true, "f5": true, "f6": true, "f7": true, "f8": true,
	"f9": true, "f10": true, "f11": true, "f12": true,
}

// Modifier reports whether k (canonical) is a modifier key.
func Modifier(k string) bool { return k == "ctrl" || k == "shift" || k == "alt" || k == "super" }

// NormalizeKey returns the canonical name of a key: lower case, aliases
// resolved; a single printable character stands for itself.
func NormalizeKey(k string) (string, error) {
	if k == "" {
		return "", fmt.Errorf("%w: empty key name", ErrInvalid)
	}
	if a, ok := keyAliases[k]; ok {
		return a, nil
	}
	if r := []rune(k); len(r) == 1 {
		if r[0] < 0x20 || r[0] == 0x7f {
			return "", fmt.Errorf("%w: unknown key %q", ErrInvalid, k)
		}
		return k, nil // case kept: pressing "A" types "A"; shortcuts fold case
	}
	l := strings.ToLower(k)
	if a, ok := keyAliases[l]; ok {
		return a, nil
	}
	if namedKeys[l] {
		return l, nil
	}
	return "", fmt.Errorf("%w: unknown key %q", ErrInvalid, k)
}
