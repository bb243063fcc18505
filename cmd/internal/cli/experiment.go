package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/experiment"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/query"
)

func init() {
	register(&cli.Command{
		Name:  "experiment",
		Usage: "ablations on lake branches: a base config, variants as overrides, seeds; one shared warm start per seed",
		Description: `An experiment file names a base loop config (examples/pipeline.yaml form), overrides of its dotted keys
for all variants (set) and per variant, and seeds (docs/experiments.md). Per seed, the plan's prefix (pool,
synthesis, warm start, initial pass) is committed once; each variant x seed runs the RL iterations on its own
branch exp/<experiment>/<variant>/s<seed> forked from it. The numbers land in the experiments table.

Example:
   cualake experiment run examples/experiments/vcs.yaml --workers 2
   cualake experiment report vcs --out out/vcs.html
   cualake experiment list`,
		Subcommands: []*cli.Command{{
			Name:      "run",
			Usage:     "run (or resume) an experiment and commit its rows of the experiments table",
			ArgsUsage: "EXP.yaml",
			Description: `Every error in the file (an unknown key, an unsafe or duplicate variant name, a base config
that fails validation) stops it before anything runs. What is committed is never redone: a rerun after a
kill continues. Branches fork from --branch (default main), whose experiments table receives the rows.
A prefix that another experiment in the lake has committed with the same steps and seed is shared,
not recomputed, and so are the leading steps (the warm start, say) that another experiment's finished
prefix recorded (docs/experiments.md, "Leading steps across experiments"). --seeds runs some of the file's seeds (a long experiment over several jobs).

Example:
   cualake experiment run examples/experiments/samplers.yaml --workers 2 --json
   cualake experiment run examples/experiments/samplers.yaml --seeds 1,2 --workers 2`,
			Flags: []cli.Flag{lakeFlag, jsonFlag,
				&cli.IntFlag{Name: "workers", Value: 1, Usage: "branches run at once, their stages as child processes of this binary (each stage also runs its config's workers)"},
				&cli.StringFlag{Name: "executor", Value: "local", Usage: "local (in this process) or slurm (each step as Slurm jobs)"},
				&cli.IntFlag{Name: "shards", Value: 4, Usage: "slurm executor: shards per shardable stage"},
				&cli.StringFlag{Name: "partition", Usage: "slurm executor: partition"},
				&cli.StringFlag{Name: "time", Usage: "slurm executor: time limit per job"},
				&cli.StringFlag{Name: "report", Usage: "also write the HTML report to this file"},
				&cli.Int64SliceFlag{Name: "seeds", Usage: "run only these of the file's seeds (--seeds 1,2): a long experiment in several jobs; each run replaces only its seeds' rows"},
			},
			Action: experimentRun,
		}, {
			Name:      "report",
			Usage:     "write an experiment's HTML comparison from the experiments table",
			ArgsUsage: "EXP (a name, or its .yaml file for the variant order and description)",
			Description: `Curves per variant with the spread over seeds, the final numbers as mean ± sd, each chart's SQL
beside it (run it with cualake query --at the snapshot the report names). It also prints
each variant's final held-out success, held-out gain over each seed's own warm start, and
training success (mean ± sd over seeds).

Example:
   cualake experiment report vcs --out out/vcs.html
   cualake experiment report examples/experiments/vcs.yaml
   cualake experiment report vcs --json   # every final number unformatted (mean and sd per variant)`,
			Flags: []cli.Flag{lakeFlag, jsonFlag,
				&cli.StringFlag{Name: "out", Usage: "HTML file (default out/experiment-<name>.html)"},
			},
			Action: experimentReport,
		}, {
			Name:  "list",
			Usage: "list the experiments in the lake: branches, variants, seeds, result rows",
			Description: `Example:
   cualake experiment list --json`,
			Flags:  []cli.Flag{lakeFlag, jsonFlag},
			Action: experimentList,
		}},
	})
}

// oneArgThenFlags returns the command's one argument and applies the
// flags after it (experiment run EXP.yaml --workers 2): the flag parser
// stops at the first argument.
func oneArgThenFlags(c *cli.Context, usage string) (string, error) {
	args := c.Args().Slice()
	if len(args) == 0 {
		return "", usageErr("%s", usage)
	}
	set := flag.NewFlagSet(c.Command.Name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range c.Command.Flags {
		if err := f.Apply(set); err != nil {
			return "", err
		}
	}
	if err := set.Parse(args[1:]); err != nil {
		return "", usageErr("%s: %v", usage, err)
	}
	if set.NArg() > 0 {
		return "", usageErr("%s: one argument, then flags (got %q too)", usage, set.Args())
	}
	var err error
	set.Visit(func(f *flag.Flag) {
		if e := c.Set(f.Name, f.Value.String()); e != nil && err == nil {
			err = usageErr("--%s: %v", f.Name, e)
		}
	})
	return args[0], err
}

func experimentRun(c *cli.Context) error {
	file, err := oneArgThenFlags(c, "experiment run EXP.yaml [--workers N] [--executor local|slurm] [--json]")
	if err != nil {
		return err
	}
	p, err := experiment.Load(file)
	if err != nil {
		return usageErr("%v", err)
	}
	if c.IsSet("seeds") {
		if p, err = p.OnlySeeds(c.Int64Slice("seeds")); err != nil {
			return usageErr("--seeds: %v", err)
		}
	}
	if c.Int("workers") < 1 {
		return usageErr("--workers is %d, want >= 1", c.Int("workers"))
	}
	if err := checkExecutor(c); err != nil {
		return err
	}
	l, err := openLake(c, true)
	if err != nil {
		return err
	}
	log := c.App.Writer
	if c.Bool("json") {
		log = c.App.ErrWriter
	}
	dir := c.String("lake")
	opt := experiment.Options{Workers: c.Int("workers"), Log: log}
	switch c.String("executor") {
	case "local":
		opt.Executor = func(branch string, out io.Writer) loop.Executor { return inProcess(dir, out, "--branch", branch) }
		if opt.Workers > 1 {
			// Branches at once run their stages as child processes: libtorch
			// state is per process, and two trainings of the causal policy in
			// one process broke each other's tensors ("nil tensor operand").
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("--workers %d: cannot find this executable to run stages in: %w", opt.Workers, err)
			}
			env := []string{}
			for _, e := range jobEnv(c) {
				if !strings.HasPrefix(e, "CUALAKE_BRANCH=") {
					env = append(env, e)
				}
			}
			opt.Executor = func(branch string, out io.Writer) loop.Executor {
				return childProcess(exe, dir, env, out, "--branch", branch)
			}
		}
	case "slurm":
		so := SlurmOptions{Shards: c.Int("shards"), Partition: c.String("partition"), Time: c.String("time")}
		// Check the options once, before anything runs.
		if _, err := slurmExecutorOn(c, so, p.Arms[0].Branch); err != nil {
			return err
		}
		opt.Executor = func(branch string, _ io.Writer) loop.Executor {
			e, err := slurmExecutorOn(c, so, branch)
			if err != nil {
				return func(context.Context, []string, []string) error { return err }
			}
			return e
		}
	default:
		return usageErr("--executor: want local or slurm")
	}
	fmt.Fprintf(log, "experiment %s: %d variants x %d seeds, %d shared prefixes, %d stems (steps prefixes share, run once), lake %s\n",
		p.Spec.Name, len(p.Spec.Variants), len(p.Spec.Seeds), len(p.Prefixes), len(p.Stems), dir)
	res, err := experiment.Run(c.Context, l, p, opt)
	if err != nil {
		return err
	}
	if r := c.String("report"); r != "" {
		if err := writeExperimentReport(c, l, nil, p.Spec.Name, p.Spec.Doc, variantOrder(p), r); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, res)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BRANCH\tVARIANT\tSEED\tRAN\tRESUMED\tHEAD")
	for _, b := range append(append([]experiment.BranchResult{}, res.Prefixes...), res.Arms...) {
		v := b.Variant
		switch {
		case b.Stem:
			v = "(stem)"
		case v == "":
			v = "(prefix)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", b.Branch, v, b.Seed, b.Ran, b.Resumed, short12(b.Head))
	}
	tw.Flush()
	fmt.Fprintf(c.App.Writer, "experiments table: %d rows in snapshot %s on %s (%.0fs); report: cualake experiment report %s\n",
		res.Rows, short12(res.Snapshot), l.Branch(), res.Seconds, p.Spec.Name)
	return nil
}

// childProcess runs stage commands as child processes of exe against the
// lake dir, with lakeArgs after --lake and env added to this process's.
func childProcess(exe, dir string, env []string, out io.Writer, lakeArgs ...string) loop.Executor {
	return func(ctx context.Context, command, flags []string) error {
		args := append(append([]string{}, command...), "--lake", dir)
		args = append(append(args, lakeArgs...), flags...)
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stdout, cmd.Stderr = out, out // one writer: one Write at a time
		cmd.Env = append(os.Environ(), env...)
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s (child process): %w", filepath.Base(exe), strings.Join(command, " "), err)
		}
		return nil
	}
}

func short12(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func variantOrder(p *experiment.Plan) []string {
	var out []string
	for _, v := range p.Spec.Variants {
		out = append(out, v.Name)
	}
	return out
}

func experimentReport(c *cli.Context) error {
	arg, err := oneArgThenFlags(c, "experiment report EXP [--out FILE]")
	if err != nil {
		return err
	}
	name, doc, order := arg, "", []string(nil)
	if strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		p, err := experiment.Load(arg)
		if err != nil {
			return usageErr("%v", err)
		}
		name, doc, order = p.Spec.Name, p.Spec.Doc, variantOrder(p)
	}
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	out := c.String("out")
	if out == "" {
		out = filepath.Join("out", "experiment-"+name+".html")
	}
	// One snapshot for the page and the JSON, though experiments may commit meanwhile.
	m, err := l.At(c.Context, "")
	if err != nil {
		return err
	}
	if err := writeExperimentReport(c, l, m, name, doc, order, out); err != nil {
		return err
	}
	final, err := experiment.Final(c.Context, l, m, name, order)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"experiment": name, "report": out, "snapshot": m.ID, "branch": l.Branch(), "final": final})
	}
	// The final numbers as the report's table gives them, for a log.
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIANT\tSEEDS\tHELDOUT\tGAIN\tTRAIN")
	for _, f := range final {
		fmt.Fprintf(tw, "%v\t%v\t%s\t%s\t%s\n", f["variant"], f["seeds"],
			meanSD(f["heldout_success"], f["heldout_success_sd"], false), meanSD(f["heldout_gain"], f["heldout_gain_sd"], true),
			meanSD(f["train_success"], f["train_success_sd"], false))
	}
	tw.Flush()
	fmt.Fprintf(c.App.Writer, "report: %s (snapshot %s)\n", out, short12(m.ID))
	return nil
}

// meanSD formats a mean and its sd over seeds as the report's table does
// ("0.506 ± 0.024", a gain with its sign); "-" where the mean is null.
func meanSD(mean, sd any, signed bool) string {
	m, ok := mean.(float64)
	if !ok {
		return "-"
	}
	s, _ := sd.(float64)
	if signed {
		return fmt.Sprintf("%+.3f ± %.3f", m, s)
	}
	return fmt.Sprintf("%.3f ± %.3f", m, s)
}

func writeExperimentReport(c *cli.Context, l *lake.Lake, m *lake.Manifest, name, doc string, order []string, out string) error {
	if err := outfile.CheckOutsideLakes(out, lakeFolders(c)...); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), outfile.DirMode()); err != nil {
		return err
	}
	return outfile.Write(out, func(w io.Writer) error { return experiment.Report(c.Context, l, m, name, doc, order, w) }, lakeFolders(c)...)
}

// experimentSummary is one line of experiment list.
type experimentSummary struct {
	Experiment string   `json:"experiment"`
	Variants   []string `json:"variants"`
	Seeds      []string `json:"seeds"`
	Branches   int      `json:"branches"`
	Prefixes   int      `json:"prefixes"` // prefix branches, stems included
	Rows       int64    `json:"rows"`     // in the experiments table of --branch
}

func experimentList(c *cli.Context) error {
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	branches, err := l.Branches(c.Context)
	if err != nil {
		return err
	}
	byName := map[string]*experimentSummary{}
	get := func(n string) *experimentSummary {
		if byName[n] == nil {
			byName[n] = &experimentSummary{Experiment: n, Variants: []string{}, Seeds: []string{}}
		}
		return byName[n]
	}
	for b := range branches {
		parts := strings.Split(b, "/")
		if len(parts) < 4 || parts[0] != "exp" {
			continue
		}
		s := get(parts[1])
		if parts[2] == "_prefix" {
			s.Prefixes++
			continue
		}
		s.Branches++
		s.Variants = addUnique(s.Variants, parts[2])
		s.Seeds = addUnique(s.Seeds, strings.TrimPrefix(parts[3], "s"))
	}
	head, err := l.Head(c.Context)
	if err != nil {
		return err
	}
	if head != "" {
		m, err := l.At(c.Context, "")
		if err != nil {
			return err
		}
		e, err := query.Open(c.Context, l, m)
		if err != nil {
			return err
		}
		defer e.Close()
		res, err := e.Query(c.Context, "SELECT experiment, count(*) FROM experiments GROUP BY experiment")
		if err != nil {
			return err
		}
		for _, r := range res.Rows {
			n, _ := r[1].(int64)
			get(fmt.Sprint(r[0])).Rows = n
		}
	}
	var list []experimentSummary
	for _, s := range byName {
		sort.Strings(s.Variants)
		sort.Strings(s.Seeds)
		list = append(list, *s)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Experiment < list[j].Experiment })
	if c.Bool("json") {
		if list == nil {
			list = []experimentSummary{}
		}
		return printJSON(c.App.Writer, map[string]any{"experiments": list, "branch": l.Branch()})
	}
	if len(list) == 0 {
		fmt.Fprintln(c.App.Writer, "no experiments in this lake (cualake experiment run EXP.yaml)")
		return nil
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EXPERIMENT\tVARIANTS\tSEEDS\tBRANCHES\tPREFIXES\tROWS")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", s.Experiment, strings.Join(s.Variants, ","), strings.Join(s.Seeds, ","), s.Branches, s.Prefixes, s.Rows)
	}
	return tw.Flush()
}

func addUnique(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}
