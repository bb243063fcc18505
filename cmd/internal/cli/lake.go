package cli

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/progress"
	"github.com/cualake/cualake/query"
)

func init() {
	register(&cli.Command{
		Name:  "lake",
		Usage: "create, inspect, verify and release a lake",
		Description: `Example:
   cualake lake init --lake ./data/lake
   cualake lake log
   cualake lake tag release/2026-11
   cualake lake branch create exp/vcs/window --from release/2026-11
   cualake segment --branch exp/vcs/window --mode window
   cualake lake export --at release/2026-11 ./release`,
		Subcommands: []*cli.Command{
			{Name: "init", Usage: "create an empty lake (idempotent)", Flags: []cli.Flag{lakeFlag, jsonFlag, newHistoryFlag},
				Description: `Refuses a lake whose main ref is missing although it holds snapshots (a dangling
history: lake verify names the candidates to restore main to), unless --new-history is given,
which commits an empty root snapshot and points main at it; the earlier snapshots stay.
Example: cualake lake init --lake ./data/lake`, Action: lakeInit},
			{Name: "log", Usage: "list snapshots, newest first", Flags: []cli.Flag{lakeFlag, jsonFlag,
				&cli.StringFlag{Name: "at", Usage: "start from this snapshot, tag or branch (default: the --branch head)"}, &cli.IntFlag{Name: "limit", Usage: "at most N snapshots"}},
				Description: "Example: cualake lake log --limit 5", Action: lakeLog},
			{Name: "show", Usage: "print a snapshot's manifest", ArgsUsage: "[SNAPSHOT|TAG]", Flags: []cli.Flag{lakeFlag, jsonFlag},
				Description: "Example: cualake lake show release/2026-11", Action: lakeShow},
			{Name: "diff", Usage: "rows added and removed per table between two snapshots", ArgsUsage: "A [B]", Flags: []cli.Flag{lakeFlag, jsonFlag},
				Description: "Example: cualake lake diff main exp/a   (B defaults to the --branch head, main)", Action: lakeDiff},
			{Name: "tag", Usage: "name a snapshot (tags never move)", ArgsUsage: "NAME [SNAPSHOT]", Flags: []cli.Flag{lakeFlag, jsonFlag},
				Description: `Names: letters, digits, '.', '_', '-' and '/', starting with a letter or digit; not main,
not 4-64 hex digits (they read as snapshot ids), no '..', no empty component or one starting
with '.', none ending in .lock or containing .tmp- (docs/lake-format.md).
Example: cualake lake tag release/2026-11 3f2a9c`, Action: lakeTag},
			{Name: "branch", Usage: "create, list and delete branches (refs/heads/NAME beside main)",
				Description: `A branch is a ref that moves with its commits: run any stage with --branch NAME
and its commit moves only that branch, by the same compare-and-swap as main. Branch names follow
the tag rules (letters, digits, '.', '_', '-' and '/'; see lake tag) and may not be taken by a tag.
Deleting a branch removes only the ref: gc keeps every manifest's files.
Example:
   cualake lake branch create exp/k-sweep/k3/s1 --from v1
   cualake lake branch list --json
   cualake lake branch delete exp/k-sweep/k3/s1`,
				Subcommands: []*cli.Command{
					{Name: "create", Usage: "start a branch at a snapshot", ArgsUsage: "NAME", Flags: []cli.Flag{lakeFlag, jsonFlag,
						&cli.StringFlag{Name: "from", Usage: "snapshot id, tag or branch to start at (default: the --branch head, main)"}},
						Description: "Creating a branch again at the same snapshot is a no-op; elsewhere, an error.\nExample: cualake lake branch create exp/a --from 3f2a9c", Action: lakeBranchCreate},
					{Name: "list", Usage: "every branch and its head", Flags: []cli.Flag{lakeFlag, jsonFlag},
						Description: "Example: cualake lake branch list --json", Action: lakeBranchList},
					{Name: "delete", Usage: "remove a branch ref (never data)", ArgsUsage: "NAME", Flags: []cli.Flag{lakeFlag, jsonFlag},
						Description: "main cannot be deleted; the snapshots stay, readable by id. The branch's run (resume) tags,\nNAME/run/..., go with it, so a branch created again under that name runs its steps again.\nExample: cualake lake branch delete exp/a", Action: lakeBranchDelete},
				}},
			{Name: "verify", Usage: "re-hash every data file and check every manifest and ref", Flags: []cli.Flag{lakeFlag, jsonFlag},
				Description: "Exits 4 when anything is wrong.\nExample: cualake lake verify --json", Action: lakeVerify},
			{Name: "gc", Usage: "remove data files that no manifest references", Flags: []cli.Flag{lakeFlag, jsonFlag,
				&cli.BoolFlag{Name: "dry-run", Usage: "only list what would go"},
				&cli.DurationFlag{Name: "grace", Value: time.Hour, Usage: "spare unreferenced files younger than this (a running commit may need them)"}},
				Description: `Keeps every file any manifest lists, reachable or not. Refuses to run over a corrupt
ref, a missing main on a lake with a history, or a ref whose history has a missing manifest.
Example: cualake lake gc --dry-run`, Action: lakeGC},
			{Name: "export", Usage: "write a self-contained release bundle", ArgsUsage: "DIR", Flags: []cli.Flag{lakeFlag, jsonFlag,
				&cli.StringFlag{Name: "at", Usage: "snapshot, tag or branch (default: the --branch head)"}},
				Description: "Hive-partitioned Parquet, manifest.json, SHA256SUMS and a dataset card README.md.\nExample: cualake lake export --at release/2026-11 ./release", Action: lakeExport},
		},
	})
}

// newHistoryFlag lets the stages that start lakes (init, import) begin a
// new root where main is missing but snapshots exist.
var newHistoryFlag = &cli.BoolFlag{Name: "new-history",
	Usage: "if main is missing although the lake holds snapshots, start a new root instead of refusing (the old snapshots stay, unreachable from main)"}

func lakeInit(c *cli.Context) error {
	l, err := openLake(c, true)
	if err != nil {
		return err
	}
	head, err := l.Head(c.Context)
	started := false
	if errors.Is(err, lake.ErrDanglingHistory) && c.Bool("new-history") {
		var m *lake.Manifest
		if m, err = l.StartNewHistory(c.Context); err == nil {
			head, started = m.ID, true
		}
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"lake": l.String(), "head": head, "new_history": started})
	}
	if started {
		fmt.Fprintf(c.App.Writer, "lake ready at %s; started a new history at empty snapshot %s (earlier snapshots are unreachable from main)\n", l, head)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "lake ready at %s\n", l)
	return nil
}

func lakeLog(c *cli.Context) error {
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	log, err := l.Log(c.Context, c.String("at"), c.Int("limit"))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if log == nil {
			log = []*lake.Manifest{}
		}
		return printJSON(c.App.Writer, log)
	}
	if len(log) == 0 {
		fmt.Fprintln(c.App.Writer, "no snapshots yet")
	}
	for _, m := range log {
		var tabs []string
		for _, n := range m.Changed {
			tabs = append(tabs, fmt.Sprintf("%s(%d)", n, m.Tables[n].Rows))
		}
		fmt.Fprintf(c.App.Writer, "%s  %-10s %s  seed=%d  %s\n", m.ID[:12], m.Stage, m.CommittedAt, m.Seed, strings.Join(tabs, " "))
	}
	return nil
}

func lakeShow(c *cli.Context) error {
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	m, err := l.At(c.Context, c.Args().First())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, m)
	}
	fmt.Fprintf(c.App.Writer, "snapshot %s\nparent   %s\nstage    %s\nseed     %d\nparams   %s\ninputs   %s\ncode     %s\ntime     %s\n",
		m.ID, m.Parent, m.Stage, m.Seed, m.Params, strings.Join(m.Inputs, ", "), m.CodeVersion, m.CommittedAt)
	for _, n := range m.TableNames() {
		t := m.Tables[n]
		var bytes int64
		for _, f := range t.Files {
			bytes += f.Bytes
		}
		fmt.Fprintf(c.App.Writer, "  %-14s v%d  %9d rows  %3d files  %10d bytes\n", n, t.SchemaVersion, t.Rows, len(t.Files), bytes)
	}
	return nil
}

func lakeDiff(c *cli.Context) error {
	if c.NArg() < 1 {
		return usageErr("lake diff needs A [B]")
	}
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	a, err := l.At(c.Context, c.Args().Get(0))
	if err != nil {
		return err
	}
	b, err := l.At(c.Context, c.Args().Get(1))
	if err != nil {
		return err
	}
	d, err := query.Diff(c.Context, l, a, b)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"a": a.ID, "b": b.ID, "tables": d})
	}
	fmt.Fprintf(c.App.Writer, "%s -> %s\n", a.ID[:12], b.ID[:12])
	for _, t := range d {
		if t.Same {
			fmt.Fprintf(c.App.Writer, "  %-14s unchanged (%d rows)\n", t.Table, t.RowsB)
			continue
		}
		fmt.Fprintf(c.App.Writer, "  %-14s +%d -%d (%d -> %d rows)\n", t.Table, t.Added, t.Removed, t.RowsA, t.RowsB)
	}
	return nil
}

func lakeTag(c *cli.Context) error {
	if c.NArg() < 1 {
		return usageErr("lake tag needs NAME [SNAPSHOT]")
	}
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	id, err := l.Tag(c.Context, c.Args().Get(0), c.Args().Get(1))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]string{"tag": c.Args().Get(0), "snapshot": id})
	}
	fmt.Fprintf(c.App.Writer, "%s -> %s\n", c.Args().Get(0), id)
	return nil
}

func lakeVerify(c *cli.Context) error {
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	var bar *progress.Bar
	rep, err := l.Verify(c.Context, func(done, total int) {
		if bar == nil {
			bar = progress.New(os.Stderr, "verify", total, c.Bool("json"))
		}
		bar.Add(1)
	})
	if err != nil {
		return err
	}
	bar.Done()
	if c.Bool("json") {
		if err := printJSON(c.App.Writer, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.App.Writer, "%d snapshots, %d files, %d bytes checked\n", rep.Snapshots, rep.Files, rep.Bytes)
		for _, p := range rep.Problems {
			fmt.Fprintf(c.App.Writer, "PROBLEM %s: %s\n", p.Key, p.Problem)
		}
	}
	if !rep.OK() {
		return cli.Exit(fmt.Sprintf("verify found %d problem(s)", len(rep.Problems)), ExitVerifyFailed)
	}
	return nil
}

func lakeGC(c *cli.Context) error {
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	rep, err := l.GC(c.Context, c.Bool("dry-run"), c.Duration("grace"))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	for _, k := range rep.Removed {
		fmt.Fprintf(c.App.Writer, "%s %s\n", verb, k)
	}
	fmt.Fprintf(c.App.Writer, "%s %d file(s), %d bytes; %d referenced file(s) kept\n", verb, len(rep.Removed), rep.Bytes, rep.Kept)
	return nil
}

func lakeExport(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("lake export needs DIR")
	}
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	if err := query.Export(c.Context, l, m, c.Args().First()); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]string{"snapshot": m.ID, "dir": c.Args().First()})
	}
	fmt.Fprintf(c.App.Writer, "exported snapshot %s to %s\n", m.ID[:12], c.Args().First())
	return nil
}

func lakeBranchCreate(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("lake branch create needs NAME")
	}
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	name := c.Args().First()
	id, err := l.CreateBranch(c.Context, name, c.String("from"))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]string{"branch": name, "snapshot": id})
	}
	fmt.Fprintf(c.App.Writer, "branch %s -> %s\n", name, id)
	return nil
}

func lakeBranchList(c *cli.Context) error {
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	bs, err := l.Branches(c.Context)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(bs))
	for n := range bs {
		names = append(names, n)
	}
	sort.Strings(names)
	if c.Bool("json") {
		out := []map[string]string{}
		for _, n := range names {
			out = append(out, map[string]string{"branch": n, "snapshot": bs[n]})
		}
		return printJSON(c.App.Writer, out)
	}
	if len(names) == 0 {
		fmt.Fprintln(c.App.Writer, "no branches yet")
	}
	for _, n := range names {
		fmt.Fprintf(c.App.Writer, "%s  %s\n", bs[n], n)
	}
	return nil
}

func lakeBranchDelete(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("lake branch delete needs NAME")
	}
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	name := c.Args().First()
	id, err := l.DeleteBranch(c.Context, name)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]string{"deleted": name, "snapshot": id})
	}
	fmt.Fprintf(c.App.Writer, "deleted branch %s (was %s; its snapshots stay)\n", name, id)
	return nil
}
