package rollout

import (
	"context"
	"fmt"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/coverage"
	"github.com/cualake/cualake/pipeline/simdesk/osworld"
	"github.com/cualake/cualake/schemas"
)

// Environments a rollout runs in.
const (
	EnvSim     = "sim"     // the embedded simulator
	EnvOSWorld = "osworld" // an OSWorld desktop server (a VM, or `cualake simdesk serve`) through osworld.Env
)

// OSWorldEnvs returns a factory of clients of the desktop server at url.
// One server is one desktop, so a run against it needs one worker.
func OSWorldEnvs(ctx context.Context, url string, p Params) EnvFactory {
	return func() (simdesk.Env, error) {
		return osworld.New(ctx, osworld.Options{BaseURL: url, NoScreenshot: p.TreeOnly})
	}
}

// Unrunnable returns, in order, the tasks env cannot run, with their
// blockers (package coverage), before any episode starts.
func Unrunnable(tasks []schemas.Task, env string) []coverage.Task {
	var out []coverage.Task
	for _, t := range tasks {
		c := coverage.Check(t)
		if (env == EnvOSWorld && !c.OnVM()) || (env != EnvOSWorld && !c.OnSim()) {
			out = append(out, c)
		}
	}
	return out
}

// maxListed bounds the tasks an UnrunnableError lists.
const maxListed = 20

// UnrunnableError describes tasks env cannot run, each with what blocks it
// and where it can run instead.
func UnrunnableError(blocked []coverage.Task, total int, env string) error {
	var b strings.Builder
	where := "the simulator (--env sim)"
	if env == EnvOSWorld {
		where = "an OSWorld VM through cualake's client (--env osworld)"
	}
	fmt.Fprintf(&b, "rollout: %d of %d tasks cannot run on %s:", len(blocked), total, where)
	for i, c := range blocked {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  ... and %d more", len(blocked)-maxListed)
			break
		}
		list := c.Sim
		if env == EnvOSWorld {
			list = c.VM
		}
		fmt.Fprintf(&b, "\n  %s (%s): %s", c.TaskID, c.Domain, strings.Join(list, "; "))
		switch {
		case env != EnvOSWorld && c.OnVM():
			b.WriteString("\n    runs on an OSWorld VM: --env osworld --osworld-url URL")
		case env != EnvOSWorld:
			fmt.Fprintf(&b, "\n    not on an OSWorld VM through cualake either (%s): run it with OSWorld's harness and import its results (cualake import osworld-results)", strings.Join(c.VM, "; "))
		case c.OnSim():
			b.WriteString("\n    runs on the simulator: --env sim")
		}
	}
	b.WriteString("\nleave them out with --skip-unsupported or --tasks; `cualake simdesk coverage` reports every task")
	return fmt.Errorf("%s", b.String())
}
