package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/audit"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/query/view"
	"github.com/cualake/cualake/schemas"
)

// auditFlags are shared by `audit` and each of its kinds, so that flags
// work before or after the kind and the `audit` stage binary takes them
// too.
var auditFlags = []cli.Flag{lakeFlag,
	&cli.StringFlag{Name: "at", Aliases: []string{"in"}, Usage: "snapshot id, id prefix or tag to audit (default main)"},
	&cli.StringFlag{Name: "against", Usage: "overlap: the evaluation pool, a snapshot or an OSWorld evaluation_examples folder"},
	&cli.StringFlag{Name: "pools", Value: audit.WithinAuto, Usage: "overlap without --against: split tasks by source (generated vs imported/seed) or split (train vs heldout); auto picks split when any task is held out"},
	&cli.StringFlag{Name: "train-sources", Usage: "overlap with --against: only these task sources form the training pool (comma list; default all)"},
	&cli.Float64Flag{Name: "threshold", Value: audit.DefaultThreshold, Usage: "overlap: near-duplicate similarity threshold, in (0.5, 1]"},
	&cli.StringFlag{Name: "labels", Usage: "judges: human labels, CSV or JSONL with trajectory_id and human (success|failure)"},
	&cli.Float64Flag{Name: "p-min", Value: audit.DefaultHealth.PMin, Usage: "health: lower edge of the frontier band"},
	&cli.Float64Flag{Name: "p-max", Value: audit.DefaultHealth.PMax, Usage: "health: upper edge of the frontier band"},
	&cli.IntFlag{Name: "stale", Value: audit.DefaultHealth.StaleVersions, Usage: "health: a sample more than this many policy versions behind is stale"},
	&cli.StringFlag{Name: "report", Usage: "write the HTML report to FILE (default out/audit-<kind>-<snapshot>.html)"},
	jsonFlag,
}

var auditKinds = map[string]string{
	audit.KindOverlap:   "overlap of a training pool with an evaluation pool: exact JSON, normalised instruction, near-duplicate, judge reuse",
	audit.KindJudges:    "executable judges against human labels per domain: agreement, false positives and negatives",
	audit.KindVerifier:  "verifier strategies against executable outcomes: agreement, FP/FN, probe rate and cost, schedule reward, Pareto frontier",
	audit.KindSynthesis: "synthesized judges per role configuration and round: executable rate, acceptance, calls and tokens per accepted task",
	audit.KindHealth:    "sampler and data health per iteration: zero-variance groups, frontier, EMA histogram, never sampled, stale, pass@k, filtering",
}

var auditExamples = map[string]string{
	audit.KindOverlap:   "cualake audit overlap --against ../shared/data/osworld\n   cualake audit overlap --pools split --json",
	audit.KindJudges:    "cualake audit judges --labels labels.csv",
	audit.KindVerifier:  "cualake audit verifier --at release/2026-11",
	audit.KindSynthesis: "cualake audit synthesis --report synthesis.html",
	audit.KindHealth:    "cualake audit health --p-min 0.1 --p-max 0.9 --json",
}

// kindFlags returns the flags of an audit kind: the shared ones, and
// --shard for the kinds that split by domain.
func auditKindFlags(kind string) []cli.Flag {
	if _, ok := audit.ShardableKinds[kind]; ok {
		return append(append([]cli.Flag{}, auditFlags...), shardFlag)
	}
	return auditFlags
}

const auditShardHelp = `

Sharded (--shard I/N), the shard audits the domains whose name falls in its shard (training
domains for overlap, trajectory domains for judges) and writes a fragment; cualake lake merge
--stage audit adds the totals over all domains from the shards' per-domain rows and commits
what the unsharded audit commits (no report: cualake notebook run audit-KIND --at SNAPSHOT).`

func init() {
	var subs []*cli.Command
	for _, kind := range audit.Kinds {
		kind := kind
		desc := "Commits a snapshot (stage audit) whose audits table holds this kind's rows; other kinds' rows carry over.\nExample:\n   " + auditExamples[kind]
		if _, ok := audit.ShardableKinds[kind]; ok {
			desc += "\n   cualake audit " + kind + " --shard 1/4   (then cualake lake merge --stage audit)" + auditShardHelp
		} else {
			desc += "\n\nNot shardable: one query over the whole snapshot, grouped by strategy, configuration or iteration rather than domain."
		}
		subs = append(subs, &cli.Command{
			Name:        kind,
			Usage:       auditKinds[kind],
			Description: desc,
			Flags:       auditKindFlags(kind),
			Action:      func(c *cli.Context) error { return runAudit(c, kind) },
		})
	}
	register(&cli.Command{
		Name:      "audit",
		Usage:     "the audit stage: overlap, judges, verifier, synthesis or health; commits rows to audits and writes a report",
		ArgsUsage: "overlap|judges|verifier|synthesis|health",
		Description: `Each audit reads one snapshot (--at, default main), replaces the rows of its kind in the
audits table, commits the next snapshot (stage "audit") and renders an HTML report with the
shipped notebook audit-<kind> (re-render it with: cualake notebook run audit-<kind> --at SNAPSHOT).
A summary goes to stdout (--json for one JSON object). See docs/audit.md.

Example:
   cualake audit overlap --against ../shared/data/osworld
   cualake audit judges --labels labels.jsonl --json
   cualake audit health --report out/health.html`,
		Flags:       auditFlags,
		Subcommands: subs,
		Action:      auditDispatch,
	})
}

// auditDispatch runs `audit KIND ...` when the kind was not dispatched as a
// subcommand: in the `audit` stage binary (StageApp runs this Action with
// the flags given before KIND) and for an unknown kind. Flags set before
// KIND are passed on after it.
func auditDispatch(c *cli.Context) error {
	if c.NArg() == 0 {
		return usageErr("audit needs a kind: %s", strings.Join(audit.Kinds, ", "))
	}
	kind := c.Args().First()
	if _, ok := auditKinds[kind]; !ok {
		return usageErr("audit: unknown kind %q (want %s)", kind, strings.Join(audit.Kinds, ", "))
	}
	args := []string{"audit", kind}
	set := c.LocalFlagNames()
	for _, f := range auditFlags {
		name := f.Names()[0]
		if !slices.ContainsFunc(f.Names(), func(n string) bool { return slices.Contains(set, n) }) {
			continue
		}
		args = append(args, fmt.Sprintf("--%s=%v", name, c.Value(name)))
	}
	args = append(args, c.Args().Tail()...)
	app := &cli.App{Name: c.App.Name, Writer: c.App.Writer, ErrWriter: c.App.ErrWriter, ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{{Name: kind, Flags: auditKindFlags(kind), Action: func(cc *cli.Context) error { return runAudit(cc, kind) }}}}
	return app.RunContext(c.Context, args)
}

// flagContext returns the context in which a flag was set explicitly (the
// kind's own, or `audit`'s when given before the kind), else c.
func flagContext(c *cli.Context, name string) *cli.Context {
	names := []string{name}
	for _, f := range auditFlags {
		if slices.Contains(f.Names(), name) {
			names = f.Names()
		}
	}
	for _, x := range c.Lineage() {
		set := x.LocalFlagNames()
		if x.Command != nil && slices.ContainsFunc(names, func(n string) bool { return slices.Contains(set, n) }) {
			return x
		}
	}
	return c
}

func fString(c *cli.Context, name string) string { return flagContext(c, name).String(name) }
func fFloat(c *cli.Context, name string) float64 { return flagContext(c, name).Float64(name) }
func fInt(c *cli.Context, name string) int       { return flagContext(c, name).Int(name) }
func fBool(c *cli.Context, name string) bool     { return flagContext(c, name).Bool(name) }

// flagSet reports whether a flag was given on the command line anywhere.
func flagSet(c *cli.Context, name string) bool {
	for _, x := range c.Lineage() {
		if x.Command != nil && slices.Contains(x.LocalFlagNames(), name) {
			return true
		}
	}
	return false
}

// kindFlags are the flags that only mean something to one audit kind; given
// to another kind they are a usage error rather than silently ignored.
var kindFlags = map[string]string{
	"against": audit.KindOverlap, "pools": audit.KindOverlap, "train-sources": audit.KindOverlap, "threshold": audit.KindOverlap,
	"labels": audit.KindJudges, "p-min": audit.KindHealth, "p-max": audit.KindHealth, "stale": audit.KindHealth,
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

func shortSnap(id string) string { return id[:min(12, len(id))] }

func auditReportPath(kind, snapshot string) string {
	return filepath.Join("out", "audit-"+kind+"-"+shortSnap(snapshot)+".html")
}

func runAudit(c *cli.Context, kind string) error {
	if c.NArg() > 0 {
		return usageErr("audit %s takes no arguments, got %q (flags go before or after the kind)", kind, strings.Join(c.Args().Slice(), " "))
	}
	for _, name := range sortedFlagNames() {
		if k := kindFlags[name]; k != kind && flagSet(c, name) {
			return usageErr("--%s applies to audit %s, not %s", name, k, kind)
		}
	}
	spec, err := parseShard(c, "audit")
	if err != nil {
		return err
	}
	if spec.Sharded() && flagSet(c, "report") {
		return usageErr("--report applies to unsharded audits; render the merged snapshot with cualake notebook run audit-%s --at SNAPSHOT", kind)
	}
	ctx := c.Context
	opt := lake.OpenOptions{CacheDir: fString(c, "cache"), Endpoint: fString(c, "s3-endpoint"), Region: fString(c, "s3-region")}
	l, err := lake.OpenURL(ctx, fString(c, "lake"), false, opt)
	if err == nil {
		l, err = onBranch(l, fString(c, "branch"))
	}
	if err != nil {
		return err
	}
	m, err := l.At(ctx, fString(c, "at"))
	if err != nil {
		return err
	}
	in := audit.Input{Lake: l, Snapshot: m}
	// Overlap and judges split by domain: a shard audits its domains, the
	// whole audit (or the merge) adds the totals.
	var owns func(domain string) bool
	if spec.Sharded() {
		owns = spec.Owns
	}
	var part *audit.Part
	var res *audit.Result
	switch kind {
	case audit.KindOverlap:
		part, err = runOverlap(c, in, owns)
	case audit.KindJudges:
		part, err = runJudges(c, in, owns)
	case audit.KindVerifier:
		res, err = audit.Verifier(ctx, in)
	case audit.KindSynthesis:
		res, err = audit.Synthesis(ctx, in)
	case audit.KindHealth:
		opt := audit.DefaultHealth
		opt.PMin, opt.PMax, opt.StaleVersions = fFloat(c, "p-min"), fFloat(c, "p-max"), fInt(c, "stale")
		res, err = audit.Health(ctx, in, opt)
	}
	if err != nil {
		return err
	}
	if spec.Sharded() {
		tx, err := l.Begin(ctx, m.ID)
		if err != nil {
			return err
		}
		out := shard.NewOutput(l, tx, spec)
		defer out.Discard()
		if err := audit.AddPart(out, part); err != nil {
			return err
		}
		r, err := out.Finish(ctx, audit.CommitInfo(tx.Parent(), kind, part.Params, part.Inputs))
		if err != nil {
			return err
		}
		return printFragment(c, r.Fragment, map[string]any{"kind": kind})
	}
	if part != nil {
		if res, err = part.Complete(); err != nil {
			return err
		}
	}
	next, err := audit.Commit(ctx, l, m.ID, res)
	if err != nil {
		return err
	}
	report := fString(c, "report")
	if report == "" {
		report = auditReportPath(kind, next.ID)
	}
	rep, err := audit.Report(ctx, l, next, kind)
	if err != nil {
		return fmt.Errorf("audit %s: committed %s, but the report failed: %w", kind, shortSnap(next.ID), err)
	}
	if err := writeReport(report, "html", rep, lakeFolders(c)...); err != nil {
		return fmt.Errorf("audit %s: committed %s, but the report failed: %w", kind, shortSnap(next.ID), err)
	}
	failed := rep.Failures()
	for _, f := range failed {
		fmt.Fprintf(c.App.ErrWriter, "warning: report %s: %s\n", report, f)
	}
	if fBool(c, "json") {
		if failed == nil {
			failed = []string{}
		}
		headline := []map[string]any{}
		for _, r := range res.Headline {
			headline = append(headline, map[string]any{"metric": r.Metric, "group": r.Group, "value": r.Value, "count": r.Count})
		}
		return printJSON(c.App.Writer, map[string]any{"kind": kind, "snapshot": next.ID, "parent": next.Parent, "inputs": next.Inputs,
			"audited": m.ID, "rows": len(res.Rows), "params": res.Params, "report": report, "report_failures": failed, "headline": headline})
	}
	w := c.App.Writer
	fmt.Fprintf(w, "audit %s of %s: %d rows, committed %s\nreport: %s\n\n", kind, shortSnap(m.ID), len(res.Rows), shortSnap(next.ID), report)
	writeAuditRows(w, res.Headline)
	return nil
}

func sortedFlagNames() []string {
	names := make([]string, 0, len(kindFlags))
	for n := range kindFlags {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// writeAuditRows prints rows as an aligned table.
func writeAuditRows(w interface{ Write([]byte) (int, error) }, rows []schemas.Audit) {
	var b bytes.Buffer
	mw, gw := len("metric"), len("group")
	for _, r := range rows {
		mw, gw = max(mw, len(r.Metric)), max(gw, len(r.Group))
	}
	fmt.Fprintf(&b, "%-*s  %-*s  %12s  %8s\n", mw, "metric", gw, "group", "value", "count")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s  %-*s  %12.4g  %8d\n", mw, r.Metric, gw, r.Group, r.Value, r.Count)
	}
	w.Write(b.Bytes())
}

func runOverlap(c *cli.Context, in audit.Input, owns func(string) bool) (*audit.Part, error) {
	ctx := c.Context
	tasks, err := lake.ReadTable(ctx, in.Lake, in.Snapshot, schemas.Tasks)
	if err != nil {
		return nil, fmt.Errorf("audit overlap: %w", err)
	}
	against := fString(c, "against")
	var train, eval audit.Pool
	var inputs []string
	switch {
	case against == "":
		if train, eval, err = audit.WithinPools(tasks, fString(c, "pools"), in.Snapshot.ID); err != nil {
			return nil, usageErr("%v", err)
		}
	case audit.IsOSWorldDir(against):
		if eval, err = audit.ReadOSWorld(against); err != nil {
			return nil, err
		}
	default:
		em, err := in.Lake.At(ctx, against)
		if err != nil {
			if _, serr := os.Stat(against); serr == nil {
				return nil, usageErr("--against %s: a folder without OSWorld examples/<domain>/<id>.json files", against)
			}
			return nil, fmt.Errorf("--against %s: neither an OSWorld evaluation_examples folder nor a snapshot: %w", against, err)
		}
		et, err := lake.ReadTable(ctx, in.Lake, em, schemas.Tasks)
		if err != nil {
			return nil, fmt.Errorf("--against %s: %w", against, err)
		}
		eval = audit.Pool{Desc: map[string]any{"snapshot": em.ID}, Items: audit.TaskItems(et, nil)}
		inputs = append(inputs, em.ID)
	}
	if against != "" {
		sources := splitList(fString(c, "train-sources"))
		desc := map[string]any{"snapshot": in.Snapshot.ID}
		if len(sources) > 0 {
			desc["sources"] = sources
		}
		train = audit.Pool{Desc: desc, Items: audit.TaskItems(tasks, sources)}
	}
	if len(train.Items) == 0 || len(eval.Items) == 0 {
		fmt.Fprintf(c.App.ErrWriter, "warning: audit overlap: %d training and %d evaluation tasks; nothing to compare (pools: %v against %v)\n",
			len(train.Items), len(eval.Items), train.Desc, eval.Desc)
	}
	res, err := audit.OverlapPart(train, eval, fFloat(c, "threshold"), owns)
	if err != nil {
		return nil, err
	}
	res.Inputs = inputs
	// The commit's params name --against as given; the rows already carry
	// the resolved pools (snapshot id, or folder and content hash).
	res.Params["against"] = against
	return res, nil
}

func runJudges(c *cli.Context, in audit.Input, owns func(string) bool) (*audit.Part, error) {
	path := fString(c, "labels")
	if path == "" {
		return nil, usageErr("audit judges needs --labels FILE (CSV or JSONL: trajectory_id, human success|failure)")
	}
	labels, err := audit.ReadLabels(path)
	if err != nil {
		return nil, err
	}
	trajs, err := lake.ReadTable(c.Context, in.Lake, in.Snapshot, schemas.Trajectories)
	if err != nil {
		return nil, fmt.Errorf("audit judges: %w", err)
	}
	tasks, err := lake.ReadTable(c.Context, in.Lake, in.Snapshot, schemas.Tasks)
	if err != nil {
		return nil, fmt.Errorf("audit judges: %w", err)
	}
	return audit.JudgesPart(trajs, tasks, labels, owns)
}

// writeReport writes a rendered report by outfile's rules (atomic replace,
// devices written through, never inside a lake: its marker, or lakes),
// creating its folder.
func writeReport(path, format string, r *notebook.Report, lakes ...string) error {
	var buf bytes.Buffer
	var err error
	switch format {
	case "html", "":
		// Ids link to pages `cualake view` writes into view/ beside the report.
		err = notebook.WriteHTMLWith(&buf, r, notebook.HTMLOptions{IDLink: view.IDLink(view.StaticLinks{Prefix: "view/"})})
	case "ipynb":
		err = notebook.WriteIPYNB(&buf, r)
	default:
		return usageErr("--format %q: want html or ipynb", format)
	}
	if err != nil {
		return err
	}
	if err := outfile.WriteBytes(path, buf.Bytes(), lakes...); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
