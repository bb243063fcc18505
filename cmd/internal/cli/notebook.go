package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/notebooks"
	"github.com/cualake/cualake/pipeline/infile"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook"
)

func init() {
	register(&cli.Command{
		Name:  "notebook",
		Usage: "run analyst notebooks (Markdown with SQL cells) against a snapshot and render HTML or ipynb",
		Description: `A notebook is Markdown; every ` + "```sql" + ` fence is a cell, with optional directives in its
leading comments (-- title:, -- chart: line|bar|histogram|scatter x=COL y=COL series=COL, -- rows: N).
See docs/notebooks.md. Shipped notebooks run by name.

Example:
   cualake notebook list
   cualake notebook run frontier --out frontier.html
   cualake notebook run notebooks/rollout-health.md --at release/2026-11 --format ipynb --out health.ipynb`,
		Subcommands: []*cli.Command{
			{
				Name: "run", Usage: "execute every cell (read-only) and write one self-contained report", ArgsUsage: "FILE|NAME",
				Description: "FILE is a notebook path, or the name of a shipped notebook (see `notebook list`). A failing cell is\n" +
					"reported in place and the rest still renders; the command then exits 1 after writing the report.\n" +
					"Example: cualake notebook run notebooks/frontier.md --at main --out report.html",
				Flags:  notebookRunFlags,
				Action: notebookRun,
			},
			{
				Name: "list", Usage: "list the shipped notebooks", Flags: []cli.Flag{jsonFlag},
				Description: "Example: cualake notebook list --json",
				Action: func(c *cli.Context) error {
					if c.Bool("json") {
						return printJSON(c.App.Writer, notebooks.Names())
					}
					for _, n := range notebooks.Names() {
						fmt.Fprintln(c.App.Writer, n)
					}
					return nil
				},
			},
		},
	})
}

// notebookSource reads a notebook file, or a shipped notebook by name when
// no such file exists.
func notebookSource(arg string) (name string, src []byte, err error) {
	// infile: a device or a huge file is refused, not read without end
	src, err = infile.Read(arg, infile.MaxText)
	if err == nil {
		return filepath.Base(arg), src, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", nil, fmt.Errorf("notebook %s: %w", arg, err)
	}
	if !strings.ContainsAny(arg, `/\`) {
		if b, serr := notebooks.Source(arg); serr == nil {
			return strings.TrimSuffix(arg, ".md") + ".md", b, nil
		}
	}
	return "", nil, fmt.Errorf("notebook %s: no such file, nor a shipped notebook (have %s)", arg, strings.Join(notebooks.Names(), ", "))
}

// notebookRunFlags are the flags of `notebook run`.
var notebookRunFlags = []cli.Flag{lakeFlag,
	&cli.StringFlag{Name: "at", Usage: "snapshot id, id prefix or tag (default main)"},
	&cli.StringFlag{Name: "out", Usage: "report file (default out/<notebook>-<snapshot>.html or .ipynb)"},
	&cli.StringFlag{Name: "format", Usage: "html or ipynb (default: from --out's extension, else html)"},
	jsonFlag,
}

func notebookRun(c *cli.Context) error {
	if c.NArg() > 1 {
		// urfave/cli stops parsing flags at the first argument; `run FILE
		// --out X` is the documented form, so parse what follows FILE again.
		return reparse(c, notebookRunFlags, notebookRun)
	}
	if c.NArg() != 1 {
		return usageErr("notebook run needs one FILE or NAME")
	}
	format := c.String("format")
	out := c.String("out")
	if format == "" {
		format = "html"
		if strings.EqualFold(filepath.Ext(out), ".ipynb") {
			format = "ipynb"
		}
	}
	if format != "html" && format != "ipynb" {
		return usageErr("--format %q: want html or ipynb", format)
	}
	name, src, err := notebookSource(c.Args().First())
	if err != nil {
		return err
	}
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	e, err := query.Open(c.Context, l, m)
	if err != nil {
		return err
	}
	defer e.Close()
	rep, err := notebook.Run(c.Context, e, notebook.Parse(name, src))
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join("out", strings.TrimSuffix(name, ".md")+"-"+shortSnap(m.ID)+"."+format)
	}
	if err := writeReport(out, format, rep, lakeFolders(c)...); err != nil {
		return err
	}
	cells, points := 0, 0
	for _, o := range rep.Cells {
		if o.Cell.Kind == notebook.SQL {
			cells++
		}
		if o.Figure != nil {
			points += o.Figure.Points
		}
	}
	failed := rep.Failures()
	if c.Bool("json") {
		if failed == nil {
			failed = []string{}
		}
		if err := printJSON(c.App.Writer, map[string]any{"notebook": name, "snapshot": m.ID, "out": out, "format": format,
			"cells": cells, "failed": failed, "chart_points": points}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.App.Writer, "wrote %s: %s against %s, %d cells, %d failed\n", out, name, shortSnap(m.ID), cells, len(failed))
	}
	return rep.Err()
}

// reparse runs action again with flags that came after positional
// arguments moved in front of them, keeping the flags already parsed.
func reparse(c *cli.Context, flags []cli.Flag, action cli.ActionFunc) error {
	takesValue := map[string]bool{}
	known := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			known[n] = true
			takesValue[n] = !isBool
		}
	}
	var flagArgs, positional []string
	args := c.Args().Slice()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		name := strings.TrimLeft(a, "-")
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, _, hasValue := strings.Cut(name, "=")
		if !known[name] {
			return usageErr("unknown flag %s", a)
		}
		flagArgs = append(flagArgs, a)
		if takesValue[name] && !hasValue && i+1 < len(args) {
			flagArgs = append(flagArgs, args[i+1])
			i++
		}
	}
	argv := []string{c.Command.Name}
	set := c.LocalFlagNames()
	for _, f := range flags {
		name := f.Names()[0]
		for _, n := range f.Names() {
			if containsString(set, n) {
				argv = append(argv, fmt.Sprintf("--%s=%v", name, c.Value(name)))
				break
			}
		}
	}
	argv = append(argv, flagArgs...)
	argv = append(argv, "--")
	argv = append(argv, positional...)
	app := &cli.App{Name: c.App.Name, Writer: c.App.Writer, ErrWriter: c.App.ErrWriter, Flags: flags, Action: func(cc *cli.Context) error {
		if cc.NArg() > 1 {
			return usageErr("%s takes one argument, got %q", c.Command.Name, strings.Join(cc.Args().Slice(), " "))
		}
		return action(cc)
	}, ExitErrHandler: func(*cli.Context, error) {}}
	return app.RunContext(c.Context, argv)
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
