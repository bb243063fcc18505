package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/coverage"
	"github.com/cualake/cualake/pipeline/simdesk/server"
	"github.com/cualake/cualake/schemas"
)

func init() {
	register(&cli.Command{
		Name:  "simdesk",
		Usage: "the embedded desktop simulator: its task pool and OSWorld's server protocol",
		Description: `Example:
   cualake simdesk pool                 # commit the built-in task pool as the tasks table
   cualake simdesk serve --port 5000    # OSWorld's desktop server API over the simulator
   cualake simdesk coverage             # which tasks the simulator and OSWorld VMs can run, per domain
   cualake simdesk templates --json     # each task's oracle template (what rollout --cover-by template groups by)`,
		Subcommands: []*cli.Command{{
			Name:  "pool",
			Usage: "commit the simulator's built-in task pool (tasks with oracles, train/heldout split)",
			Description: `Replaces the tasks table with the built-in pool plus any non-seed tasks already there
(synthesized or imported tasks are kept).

Example: cualake simdesk pool --json`,
			Flags:  []cli.Flag{lakeFlag, jsonFlag},
			Action: runSimdeskPool,
		}, {
			Name:  "serve",
			Usage: "serve the simulator with OSWorld's desktop server HTTP API",
			Description: `Endpoints as OSWorld's desktop_env/server/main.py: /screenshot, /accessibility, /execute, /setup/...,
/platform, /cursor_position, /screen_size, ...; /simdesk/... for reset, state and judging.

Example: cualake simdesk serve --port 5000 --seed 1`,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "host", Value: "127.0.0.1", Usage: "address to listen on"},
				&cli.IntFlag{Name: "port", Value: 5000, Usage: "port"},
				&cli.Int64Flag{Name: "seed", Usage: "simulator seed"},
				&cli.IntFlag{Name: "width", Value: simdesk.DefaultWidth, Usage: "screen width"},
				&cli.IntFlag{Name: "height", Value: simdesk.DefaultHeight, Usage: "screen height"},
			},
			Action: runSimdeskServe,
		}, {
			Name:  "coverage",
			Usage: "per domain, how many tasks of a snapshot the simulator (and an OSWorld VM through --env osworld) can run, and what blocks the rest",
			Description: `Checks every task of the snapshot's tasks table as rollout does before any episode: setup steps,
judge functions and getters, evaluator postconfig steps, and the task's app; tasks without a static
blocker are also reset on a fresh simulator and judged untouched.

Example:
   cualake import osworld-tasks ../shared/data/osworld && cualake simdesk coverage
   cualake simdesk coverage --json --list`,
			Flags: []cli.Flag{lakeFlag, jsonFlag,
				&cli.StringFlag{Name: "in", Usage: "snapshot (default main)"},
				&cli.BoolFlag{Name: "list", Usage: "also list every task the simulator cannot run, with its blockers"},
				&cli.IntFlag{Name: "top", Value: 5, Usage: "blockers shown per domain"},
			},
			Action: runSimdeskCoverage,
		}, {
			Name:  "templates",
			Usage: "each task's oracle template: the oracle's actions on the simulator, in the policy's action language (what rollout --cover-by template groups by)",
			Description: `Plays the oracle on every task of the snapshot's tasks table in the embedded simulator (trees
only, desktop seed 0) and writes each action as the causal policy would (trainer/featurize); two
tasks share a template when those texts are equal. Tasks the oracle cannot solve there are listed
with why. Prints one line per task (task, split, template id, then the text), or with --json the
rows and the templates with their tasks.

Example:
   cualake simdesk templates --in exp/cover-template/template/s1
   cualake simdesk templates --json > templates.json   (templates[].splits: which splits have it)`,
			Flags: []cli.Flag{lakeFlag, jsonFlag,
				&cli.StringFlag{Name: "in", Usage: "snapshot (default main)"},
			},
			Action: runSimdeskTemplates,
		}},
	})
}

func runSimdeskTemplates(c *cli.Context) error {
	m, tasks, err := snapshotTasks(c)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return usageErr("snapshot %s has no tasks (run cualake simdesk pool first)", m.ID)
	}
	tm, err := rollout.OracleTemplates(tasks)
	if err != nil {
		return err
	}
	templates, ids := tm.Groups(tasks)
	type taskRow struct {
		TaskID   string `json:"task_id"`
		Split    string `json:"split"`
		Template int    `json:"template,omitempty"` // 0: none
		Missing  string `json:"missing,omitempty"`
	}
	rows := make([]taskRow, len(tasks))
	for i, t := range tasks {
		rows[i] = taskRow{TaskID: t.TaskID, Split: t.Split, Template: ids[i], Missing: tm.Missing[t.TaskID]}
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"snapshot": m.ID, "tasks": rows, "templates": templates, "missing": len(tm.Missing)})
	}
	for _, r := range rows {
		if r.Template == 0 {
			fmt.Fprintf(c.App.Writer, "%s\t%s\t-\t(no template: %s)\n", r.TaskID, r.Split, r.Missing)
			continue
		}
		fmt.Fprintf(c.App.Writer, "%s\t%s\tt%d\t%s\n", r.TaskID, r.Split, r.Template, templates[r.Template-1].Text)
	}
	fmt.Fprintf(c.App.ErrWriter, "%d tasks, %d templates, %d without one; snapshot %s\n", len(rows), len(templates), len(tm.Missing), m.ID)
	return nil
}

func runSimdeskPool(c *cli.Context) error {
	ctx := c.Context
	l, err := openLake(c, true)
	if err != nil {
		return err
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		return err
	}
	if err := simdesk.PoolError(); err != nil {
		return fmt.Errorf("built-in pool: %w", err)
	}
	rows := simdesk.Pool()
	builtin := map[string]bool{}
	for _, t := range rows {
		builtin[t.TaskID] = true
	}
	kept := 0
	if tx.Parent() != "" {
		old, err := lake.ReadTable(ctx, l, tx.Base(), schemas.Tasks)
		if err != nil {
			return err
		}
		for _, t := range old {
			if !builtin[t.TaskID] && t.Source != schemas.SourceSeed {
				rows = append(rows, t)
				kept++
			}
		}
	}
	if err := lake.ReplaceTable(ctx, tx, schemas.Tasks, rows); err != nil {
		return err
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "pool", Params: map[string]any{"source": "simdesk"}})
	if err != nil {
		return err
	}
	splits := map[string]int{}
	for _, t := range rows {
		splits[t.Split]++
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"snapshot": m.ID, "tasks": len(rows), "kept": kept, "splits": splits})
	}
	fmt.Fprintf(c.App.Writer, "%d tasks (%d kept from the lake), splits %v\nsnapshot %s\n", len(rows), kept, splits, m.ID)
	return nil
}

// snapshotTasks reads the tasks table of the snapshot --in names (default
// main).
func snapshotTasks(c *cli.Context) (*lake.Manifest, []schemas.Task, error) {
	ctx := c.Context
	l, err := openLake(c, false)
	if err != nil {
		return nil, nil, err
	}
	id, err := l.Resolve(ctx, c.String("in"))
	if err != nil {
		return nil, nil, err
	}
	m, err := l.Snapshot(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	tasks, err := lake.ReadTable(ctx, l, m, schemas.Tasks)
	if err != nil {
		return nil, nil, err
	}
	return m, tasks, nil
}

func runSimdeskCoverage(c *cli.Context) error {
	m, tasks, err := snapshotTasks(c)
	if err != nil {
		return err
	}
	checked := make([]coverage.Task, len(tasks))
	for i, t := range tasks {
		checked[i] = coverage.Check(t)
	}
	r := coverage.Summarize(checked)
	var blocked []coverage.Task
	for _, t := range checked {
		if !t.OnSim() {
			blocked = append(blocked, t)
		}
	}
	if c.Bool("json") {
		out := map[string]any{"snapshot": m.ID, "report": r}
		if c.Bool("list") {
			out["blocked"] = blocked
		}
		return printJSON(c.App.Writer, out)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "%d tasks of snapshot %.12s: the simulator runs %d, an OSWorld VM through rollout --env osworld runs %d\n\n",
		r.Total.Tasks, m.ID, r.Total.OnSim, r.Total.OnVM)
	fmt.Fprintf(w, "%-20s %6s %6s %6s\n", "domain", "tasks", "sim", "vm")
	for _, d := range append(r.Domains, r.Total) {
		fmt.Fprintf(w, "%-20s %6d %6d %6d\n", d.Domain, d.Tasks, d.OnSim, d.OnVM)
	}
	top := max(c.Int("top"), 1)
	show := func(title string, pick func(coverage.Domain) []coverage.Count) {
		fmt.Fprintf(w, "\n%s (tasks each blocks):\n", title)
		for _, d := range append(r.Domains, r.Total) {
			counts := pick(d)
			if len(counts) == 0 {
				continue
			}
			var parts []string
			for i, b := range counts {
				if i == top {
					parts = append(parts, fmt.Sprintf("%d more", len(counts)-top))
					break
				}
				parts = append(parts, fmt.Sprintf("%s (%d)", b.Blocker, b.Tasks))
			}
			fmt.Fprintf(w, "  %s: %s\n", d.Domain, strings.Join(parts, ", "))
		}
	}
	show("blockers on the simulator", func(d coverage.Domain) []coverage.Count { return d.SimBlockers })
	show("blockers on an OSWorld VM through cualake", func(d coverage.Domain) []coverage.Count { return d.VMBlockers })
	if c.Bool("list") {
		fmt.Fprintf(w, "\ntasks the simulator cannot run:\n")
		for _, t := range blocked {
			fmt.Fprintf(w, "  %s (%s): %s\n", t.TaskID, t.Domain, strings.Join(t.Sim, "; "))
		}
	}
	return nil
}

func runSimdeskServe(c *cli.Context) error {
	d, err := simdesk.New(c.Int("width"), c.Int("height"), c.Int64("seed"))
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(c.String("host"), strconv.Itoa(c.Int("port")))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := server.NewHTTPServer(d)
	fmt.Fprintf(c.App.ErrWriter, "simdesk serving OSWorld's desktop API on http://%s\n", ln.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
