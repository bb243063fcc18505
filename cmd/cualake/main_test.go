package main

import "testing"

// TestAppForStageNames: started as a stage's name (a hard link in bin/),
// the binary is that stage alone; under any other name it is the toolkit.
func TestAppForStageNames(t *testing.T) {
	for _, arg0 := range []string{"bin/segment", "/usr/local/bin/train", "rollout"} {
		if app := appFor(arg0); app.Name == "cualake" || len(app.Commands) != 0 {
			t.Errorf("%s: got app %q with %d commands, want the stage alone", arg0, app.Name, len(app.Commands))
		}
	}
	if app := appFor("/opt/bin/cualake"); app.Name != "cualake" || len(app.Commands) == 0 {
		t.Errorf("cualake: got app %q with %d commands", app.Name, len(app.Commands))
	}
}
