package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/importer"
	"github.com/cualake/cualake/pipeline/progress"
)

func init() {
	index := &cli.StringFlag{Name: "index", Usage: "osworld-tasks: import only the tasks this index file (domain -> ids; looked up in DIR first) names"}
	quarantine := &cli.BoolFlag{Name: "quarantine", Usage: "commit the good records and keep each bad one, raw, with its reason, in the rejects table (default: a bad record fails the import and nothing is committed)"}
	in := &cli.StringFlag{Name: "in", Usage: "snapshot to import on top of (default main); pin it when sharding"}
	maxFile := &cli.Int64Flag{Name: "max-file-bytes", Value: importer.DefaultMaxFileBytes,
		Usage: "refuse (as a bad record) any screenshot, log or task file larger than this; FIFOs, devices and folders are always refused"}
	register(&cli.Command{
		Name:  "import",
		Usage: "bring OSWorld tasks, OSWorld run folders or JSONL rollout logs into the lake",
		Description: `Each import commits one snapshot (stage "import"). Records already in the lake (tasks by
task_id, trajectories by trajectory_id, blobs by hash) are reported as present and not added
again; one whose key is taken with other content is a bad record naming both sources. Every
bad record is reported with its file, line and field. Files an input names (screenshots, logs)
must be regular files under --max-file-bytes (docs/import-jsonl.md).

Example:
   cualake import osworld-tasks ../shared/data/osworld
   cualake import osworld-tasks --index test_small.json ../shared/data/osworld
   cualake import osworld-results --quarantine ./results
   cualake import jsonl --json rollouts-*.jsonl
   cualake import jsonl --shard 1/4 --in 3f2a9c rollouts-*.jsonl   (then cualake lake merge --stage import --in 3f2a9c)

Sharded (--shard I/N), a shard imports the files of its shard and writes a fragment:
osworld-tasks by task file (keyed by the task id, so copies of one id in two domains meet in
one shard), osworld-results by episode folder, jsonl by input file. A jsonl shard also reads
the files given before its own, writing nothing, so that a task or trajectory an earlier
file holds is present for it as in an unsharded import. Give every shard the same paths.`,
		Subcommands: []*cli.Command{
			{
				Name: "osworld-tasks", Usage: "import OSWorld task definitions (examples/<domain>/<id>.json)", ArgsUsage: "DIR",
				Description: `Reads OSWorld's evaluation_examples layout; the domain is the folder name. The original
JSON of each task is kept byte-exact in the raw column.
Example: cualake import osworld-tasks --index test_small.json ../shared/data/osworld`,
				Flags:  []cli.Flag{lakeFlag, jsonFlag, shardFlag, in, quarantine, index, newHistoryFlag, maxFile},
				Action: importAction(importer.KindOSWorldTasks),
			},
			{
				Name: "osworld-results", Usage: "import OSWorld run folders (traj.jsonl, screenshots, result.txt)", ArgsUsage: "DIR",
				Description: `Reads <action_space>/<observation_type>/<model>/<domain>/<example_id>/ folders into
trajectories, steps and blobs (screenshots, stored once by hash; cualake blob get HASH shows one).
Example: cualake import osworld-results ./results`,
				Flags: []cli.Flag{lakeFlag, jsonFlag, shardFlag, in, quarantine, index, newHistoryFlag, maxFile,
					&cli.IntFlag{Name: "workers", Usage: "episodes read in parallel (0: one per CPU)"}},
				Action: importAction(importer.KindOSWorldResults),
			},
			{
				Name: "jsonl", Usage: "import generic rollout logs, one trajectory per line (docs/import-jsonl.md)", ArgsUsage: "FILE...",
				Description: "Example: cualake import jsonl --quarantine rollouts.jsonl",
				Flags:       []cli.Flag{lakeFlag, jsonFlag, shardFlag, in, quarantine, index, newHistoryFlag, maxFile},
				Action:      importAction(importer.KindJSONL),
			},
		},
	})
}

func importAction(kind string) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() == 0 || (kind != importer.KindJSONL && c.NArg() != 1) {
			if kind == importer.KindJSONL {
				return usageErr("import jsonl needs FILE...")
			}
			return usageErr("import %s needs one DIR", kind)
		}
		if kind != importer.KindOSWorldTasks && c.String("index") != "" {
			return usageErr("--index applies to import osworld-tasks only")
		}
		spec, err := parseShard(c, importer.Stage)
		if err != nil {
			return err
		}
		l, err := openLake(c, false)
		if err != nil {
			return err
		}
		var bar *progress.Bar
		last := 0
		unit := "files"
		switch kind {
		case importer.KindOSWorldResults:
			unit = "episodes"
		case importer.KindJSONL:
			unit = "bytes"
		}
		opts := importer.Options{Kind: kind, Paths: c.Args().Slice(), Index: c.String("index"), Quarantine: c.Bool("quarantine"),
			Workers: c.Int("workers"), In: c.String("in"), Shard: spec, NewHistory: c.Bool("new-history"),
			MaxFileBytes: c.Int64("max-file-bytes"),
			Progress: func(done, total int) {
				if bar == nil {
					bar = progress.New(c.App.ErrWriter, "import "+kind+" ("+unit+")", total, c.Bool("json"))
				}
				bar.Add(done - last)
				last = done
			}}
		rep, err := importer.Run(c.Context, l, opts)
		bar.Done()
		if err == nil && rep.Fragment != nil {
			return printFragment(c, rep.Fragment, map[string]any{"report": rep})
		}
		if rep != nil {
			if c.Bool("json") {
				if perr := printJSON(c.App.Writer, rep); perr != nil && err == nil {
					err = perr
				}
			} else {
				printImportReport(c.App.Writer, rep)
			}
		}
		if errors.Is(err, importer.ErrRejected) {
			return cli.Exit(err.Error(), ExitFailure)
		}
		return err
	}
}

func printImportReport(w io.Writer, r *importer.Report) {
	for _, x := range r.Rejects {
		fmt.Fprintf(w, "REJECT %s:%d field %s: %s\n", x.File, x.Line, x.Field, x.Reason)
	}
	if r.Rejected > len(r.Rejects) {
		fmt.Fprintf(w, "... and %d more rejects\n", r.Rejected-len(r.Rejects))
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "the index names %d task(s) with no file: %s\n", len(r.Missing), strings.Join(r.Missing, ", "))
	}
	var parts []string
	if r.Kind == importer.KindOSWorldTasks || r.Tasks.Added+r.Tasks.Present > 0 {
		parts = append(parts, fmt.Sprintf("tasks +%d (%d already present)", r.Tasks.Added, r.Tasks.Present))
	}
	if r.Kind != importer.KindOSWorldTasks {
		parts = append(parts, fmt.Sprintf("trajectories +%d (%d already present)", r.Trajectories.Added, r.Trajectories.Present),
			fmt.Sprintf("steps +%d", r.Steps), fmt.Sprintf("blobs +%d (%d stored before)", r.Blobs.Added, r.Blobs.Present))
	}
	if r.Quarantined > 0 || (r.Rejected > 0 && r.Committed) {
		parts = append(parts, fmt.Sprintf("rejects +%d", r.Quarantined))
	}
	status := "nothing new; snapshot unchanged"
	switch {
	case r.Committed:
		status = "snapshot " + r.Snapshot
	case r.Rejected > 0 && !r.Committed:
		status = "nothing committed"
	}
	fmt.Fprintf(w, "import %s: %s; %s\n", r.Kind, strings.Join(parts, ", "), status)
}
