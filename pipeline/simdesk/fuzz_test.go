package simdesk

import (
	"encoding/json"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk/action"
)

// richState opens every app with dialogs, edits and popups in progress.
func richState(t *testing.T) []byte {
	u := setupUI(t, createFile("~/Documents/s.csv", "a,1\nb,=B1*2\n"), createFile("~/Documents/t.txt", "one\ntwo\n"),
		openFile("~/Documents/s.csv"), openFile("~/Documents/t.txt"), openApp("mail"), openApp("settings"), openApp("files"))
	u.act("hotkey ctrl shift n")
	u.click("click", "dock/mail")
	u.click("click", "mail/compose")
	u.typ("x@y.z")
	u.click("click", "dock/settings")
	u.click("click", "settings/page:network")
	u.click("click", "settings/set:network.dns")
	u.click("click", "dock/sheet")
	u.typ("12")
	u.click("click", "dock/editor")
	u.act("hotkey ctrl h")
	st, err := u.d.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// mutate calls f with a copy of v for every leaf replaced by each of the
// replacement values of its kind.
func mutate(v any, f func(any)) {
	var walk func(cur any, set func(any))
	walk = func(cur any, set func(any)) {
		switch x := cur.(type) {
		case map[string]any:
			for k, e := range x {
				walk(e, func(n any) { old := x[k]; x[k] = n; set(x); x[k] = old })
			}
		case []any:
			for i, e := range x {
				walk(e, func(n any) { old := x[i]; x[i] = n; set(x); x[i] = old })
			}
		case float64:
			for _, n := range []float64{-1, -100000, 1e6, 199, 200, 25, 26} {
				set(n)
			}
		case string:
			for _, n := range []string{"", "zzz", "/", "files", "x:1:2"} {
				set(n)
			}
		case bool:
			set(!x)
		}
	}
	walk(v, func(any) { f(v) })
}

// Restored states with any single field corrupted either fail validation
// or behave: no action, tree or screenshot panics.
func TestCorruptedStatesNeverPanic(t *testing.T) {
	var root any
	if err := json.Unmarshal(richState(t), &root); err != nil {
		t.Fatal(err)
	}
	acts := []string{"click 500 500", "type hi\\n", "key escape", "scroll down 3 500 500", "hotkey ctrl s", "key tab",
		"double_click 300 300", "key enter", "drag 400 300 600 500", "key up", "key delete"}
	tried, accepted := 0, 0
	mutate(root, func(v any) {
		b, _ := json.Marshal(v)
		tried++
		e := newDesk(t, 0)
		if e.RestoreState(b) != nil {
			return
		}
		accepted++
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panic on a corrupted state: %v\n%s", r, b)
			}
		}()
		e.Tree()
		for _, a := range acts {
			x, _ := action.Parse(a)
			e.Apply(x)
		}
		if tried%20 == 0 {
			if _, err := e.Screenshot(); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Logf("%d corrupted states, %d accepted and exercised", tried, accepted)
}
