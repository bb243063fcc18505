package simdesk

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestZZShape(t *testing.T) {
	sim, _ := NewSim(Options{TreeOnly: true})
	f, _ := os.Create("/tmp/shape/shapes.tsv")
	defer f.Close()
	for _, task := range Pool() {
		pol, err := Oracle(task)
		if err != nil {
			t.Fatal(err)
		}
		ep, err := Run(sim, pol, task, 0, MaxOracleSteps)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, a := range ep.Actions {
			p := a.Kind
			if len(a.Keys) > 0 {
				p += "(" + strings.Join(a.Keys, "+") + ")"
			}
			if len(parts) > 0 && parts[len(parts)-1] == p {
				continue
			}
			parts = append(parts, p)
		}
		fmt.Fprintf(f, "%s\t%s\t%s\t%d\n", FamilyOf(task.TaskID), task.TaskID, task.Split, len(ep.Actions))
		fmt.Fprintf(f, "\t%s\n", strings.Join(parts, " "))
	}
}
