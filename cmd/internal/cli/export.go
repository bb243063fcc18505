package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/exporter"
)

func init() {
	at := &cli.StringFlag{Name: "at", Usage: "snapshot id, id prefix or tag (default main)"}
	register(&cli.Command{
		Name:  "export",
		Usage: "write a snapshot's tasks, batches or segments in other tools' formats",
		Description: `For a release bundle of every table, see cualake lake export.

Example:
   cualake export osworld-tasks --at release/2026-11 ./osworld-pool
   cualake export verl --at main pool.parquet
   cualake export verl --batch 3 batch3.parquet
   cualake export verl --segments segments.parquet`,
		Subcommands: []*cli.Command{
			{
				Name: "osworld-tasks", Usage: "write the task pool in OSWorld's layout (examples/<domain>/<id>.json + test_all.json)", ArgsUsage: "DIR",
				Description: `Imported tasks are written back byte-exactly; tasks cualake made are built from their columns.
Example: cualake export osworld-tasks --at main ./osworld-pool`,
				Flags:  []cli.Flag{lakeFlag, jsonFlag, at},
				Action: exportOSWorld,
			},
			{
				Name: "verl", Usage: "write a task pool, a batch or segments as a verl-style Parquet dataset", ArgsUsage: "OUT.parquet",
				Description: `Rows hold data_source, prompt [{role, content}], ability, reward_model {style, ground_truth}
and extra_info {split, index, task_id, ...}; --segments writes input_ids, loss_mask, logprobs,
advantage and group_id for trainers that take pre-tokenized data.
Example: cualake export verl --at main --batch 3 batch3.parquet`,
				Flags: []cli.Flag{lakeFlag, jsonFlag, at,
					&cli.IntFlag{Name: "batch", Value: -1, Usage: "write the sampled batch of this iteration instead of the whole pool"},
					&cli.BoolFlag{Name: "segments", Usage: "write the segments table (pre-tokenized training items)"}},
				Action: exportVerl,
			},
		},
	})
}

func exportOSWorld(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("export osworld-tasks needs DIR")
	}
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	rep, err := exporter.OSWorldTasks(c.Context, l, m, c.Args().First())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	fmt.Fprintf(c.App.Writer, "wrote %d task(s) in %d domain(s) from snapshot %s to %s (%d byte-exact originals)\n",
		rep.Tasks, len(rep.Domains), m.ID[:12], rep.Dir, rep.FromRaw)
	return nil
}

func exportVerl(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("export verl needs OUT.parquet")
	}
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	opts := exporter.VerlOptions{Segments: c.Bool("segments")}
	if b := c.Int("batch"); b >= 0 {
		it := int32(b)
		opts.Batch = &it
	}
	if opts.Segments && opts.Batch != nil {
		return usageErr("--segments and --batch exclude each other")
	}
	rep, err := exporter.Verl(c.Context, l, m, c.Args().First(), opts)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	fmt.Fprintf(c.App.Writer, "wrote %d %s row(s) from snapshot %s to %s\n", rep.Rows, rep.Shape, m.ID[:12], rep.Out)
	return nil
}
