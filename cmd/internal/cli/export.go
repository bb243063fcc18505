package cli

import (
	"fmt"
	"math"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/exporter"
)

func init() {
	at := &cli.StringFlag{Name: "at", Usage: "snapshot id, id prefix or tag (default main)"}
	register(&cli.Command{
		Name:  "export",
		Usage: "write a snapshot's tasks, trajectories or segments in other tools' formats (OSWorld, verl, LLaMA-Factory, Hugging Face datasets)",
		Description: `For a release bundle of every table, see cualake lake export. Formats and loader calls: docs/export.md.

Example:
   cualake export osworld-tasks --at release/2026-11 ./osworld-pool
   cualake export verl --at main pool.parquet
   cualake export verl --batch 3 batch3.parquet
   cualake export segments --images files ./segments
   cualake export sft --format llamafactory ./sft
   cualake export hf --table steps ./steps-hf
   cualake export verdicts verdicts.json`,
		Subcommands: []*cli.Command{
			{
				Name: "osworld-tasks", Usage: "write the task pool in OSWorld's layout (examples/<domain>/<id>.json + test_all.json)", ArgsUsage: "DIR",
				Description: `Imported tasks are written back byte-exactly; tasks cualake made are built from their columns.
Example: cualake export osworld-tasks --at main ./osworld-pool`,
				Flags:  []cli.Flag{lakeFlag, jsonFlag, at},
				Action: exportOSWorld,
			},
			{
				Name: "verl", Usage: "write a task pool, a batch or segments as a verl RLHFDataset Parquet file", ArgsUsage: "OUT.parquet",
				Description: `Rows hold data_source, prompt [{role, content}] with <image>, images [{bytes, path}] (the task's first
screenshot), ability, reward_model {style, ground_truth} and extra_info {split, index, task_id, ...}.
Score them with examples/verl/cualake_reward.py (verl's custom_reward_function).
--text-only writes prompts without images; --segments writes pre-tokenized items (as export segments).
Example: cualake export verl --at main --batch 3 batch3.parquet`,
				Flags: []cli.Flag{lakeFlag, jsonFlag, at,
					&cli.IntFlag{Name: "batch", Value: -1, Usage: "write the sampled batch of this iteration instead of the whole pool"},
					&cli.BoolFlag{Name: "segments", Usage: "write the segments table (pre-tokenized training items)"},
					&cli.StringFlag{Name: "images", Value: "none", Usage: "with --segments: inline (an images column of PNG bytes) or none (blob hashes only)"},
					&cli.BoolFlag{Name: "text-only", Usage: "prompts without screenshots (no images column, no <image>)"},
					&cli.BoolFlag{Name: "skip-without-image", Usage: "leave out tasks with no screenshot (no rollout, not a simulator task) instead of failing"}},
				Action: exportVerl,
			},
			{
				Name: "segments", Usage: "write the segments table with everything a trainer needs, and their screenshots", ArgsUsage: "DIR",
				Description: `DIR/segments.parquet: input_ids, loss_mask, logprobs (null where none were recorded), has_logprobs,
advantage, reward, ids, steps, tokenizer and each item's screenshots in order (image_hashes);
--images files (default) writes DIR/images/<sha256>.png once each and image_paths,
inline an images column of Image {bytes, path}, none hashes only.
Example: cualake export segments --at main --images files ./segments`,
				Flags: []cli.Flag{lakeFlag, jsonFlag, at,
					&cli.StringFlag{Name: "images", Value: "files", Usage: "files, inline or none"}},
				Action: exportSegments,
			},
			{
				Name: "sft", Usage: "write successful or selected trajectories as a LLaMA-Factory multimodal SFT dataset", ArgsUsage: "DIR",
				Description: `DIR/<name>.json (one conversation per turn, the rollout policy's context: system prompt, task with
compact action history, the last --window screenshots as <image> with their replies), DIR/images/<sha256>.png
and DIR/dataset_info.json. Train with LLaMA-Factory: dataset_dir: DIR, dataset: <name>.
Example: cualake export sft --format llamafactory --from oracle ./sft
         cualake export sft --select "select trajectory_id from trajectories where reward = 1 and steps <= 10" ./sft`,
				Flags: []cli.Flag{lakeFlag, jsonFlag, at,
					&cli.StringFlag{Name: "format", Value: "llamafactory", Usage: "llamafactory (messages/role/content) or sharegpt (conversations/from/value)"},
					&cli.StringFlag{Name: "from", Usage: "success (every successful trajectory; the default) or oracle (successful oracle demonstrations)"},
					&cli.StringFlag{Name: "select", Usage: "SQL returning trajectory_id, run on the snapshot (instead of --from)"},
					&cli.IntFlag{Name: "window", Value: exporter.DefaultSFTWindow, Usage: "screenshots per sample, the current one included"},
					&cli.StringFlag{Name: "name", Value: "cualake_sft", Usage: "dataset name in dataset_info.json"}},
				Action: exportSFT,
			},
			{
				Name: "hf", Usage: "write a table or query as Hugging Face datasets Parquet shards (images as the Image feature)", ArgsUsage: "DIR",
				Description: `DIR/data/<split>-NNNNN-of-NNNNN.parquet with the features metadata datasets reads, and DIR/README.md.
Columns of screenshot blob hashes (--image; steps.observation and verifications.evidence by default)
become Image {bytes, path}. Load: datasets.load_dataset("parquet", data_files="DIR/data/*.parquet").
Example: cualake export hf --table steps ./steps-hf
         cualake export hf --sql "select task_id, instruction from tasks" ./tasks-hf`,
				Flags: []cli.Flag{lakeFlag, jsonFlag, at,
					&cli.StringFlag{Name: "table", Usage: "a table of the snapshot"},
					&cli.StringFlag{Name: "sql", Usage: "one read-only SQL statement over the snapshot"},
					&cli.StringSliceFlag{Name: "image", Usage: "a column of blob hashes to write as images (repeatable)"},
					&cli.IntFlag{Name: "shard-rows", Value: exporter.DefaultShardRows, Usage: "rows per shard"},
					&cli.StringFlag{Name: "split", Value: "train", Usage: "split name of the shards"}},
				Action: exportHF,
			},
			{
				Name: "verdicts", Usage: "write every trajectory's reward and outcome as JSON (for examples/verl/cualake_reward.py)", ArgsUsage: "OUT.json",
				Description: `{"format": "cualake-verdicts/1", "snapshot": ..., "trajectories": {id: {task_id, reward, outcome, verifier}}}.
Example: cualake export verdicts --at main verdicts.json`,
				Flags:  []cli.Flag{lakeFlag, jsonFlag, at},
				Action: exportVerdicts,
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
	opts := exporter.VerlOptions{Segments: c.Bool("segments"), TextOnly: c.Bool("text-only"), SkipWithoutImage: c.Bool("skip-without-image")}
	// -1 (the default) is the whole pool; an iteration is an int32.
	if _, err := intFlag(c, "batch", -1, math.MaxInt32); err != nil {
		return err
	}
	if b := c.Int("batch"); b >= 0 {
		it := int32(b)
		opts.Batch = &it
	}
	if opts.Segments && opts.Batch != nil {
		return usageErr("--segments and --batch exclude each other")
	}
	if opts.Segments && (opts.TextOnly || opts.SkipWithoutImage) {
		return usageErr("--text-only and --skip-without-image are for prompts, not --segments")
	}
	if c.IsSet("images") && !opts.Segments {
		return usageErr("--images is for --segments (prompt rows always carry their screenshot unless --text-only)")
	}
	mode, err := exporter.ParseImagesMode(c.String("images"))
	if err != nil {
		return usageErr("%v", err)
	}
	if opts.Segments && mode == exporter.ImagesFiles {
		return usageErr("--images files writes a folder: use cualake export segments DIR")
	}
	opts.Images = mode
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	rep, err := exporter.Verl(c.Context, l, m, c.Args().First(), opts)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	fmt.Fprintf(c.App.Writer, "wrote %d %s row(s) from snapshot %s to %s", rep.Rows, rep.Shape, m.ID[:12], rep.Out)
	if rep.FromRollouts+rep.Rendered > 0 {
		fmt.Fprintf(c.App.Writer, " (screenshots: %d from rollouts, %d rendered by the simulator)", rep.FromRollouts, rep.Rendered)
	}
	if rep.Skipped > 0 {
		fmt.Fprintf(c.App.Writer, "; left out %d task(s) without a screenshot", rep.Skipped)
	}
	fmt.Fprintln(c.App.Writer)
	return nil
}

func exportSegments(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("export segments needs DIR")
	}
	mode, err := exporter.ParseImagesMode(c.String("images"))
	if err != nil {
		return usageErr("%v", err)
	}
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	rep, err := exporter.Segments(c.Context, l, m, c.Args().First(), exporter.SegmentsOptions{Images: mode})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	fmt.Fprintf(c.App.Writer, "wrote %d segment(s) from snapshot %s to %s (images %s, %d file(s))\n", rep.Rows, m.ID[:12], rep.Dir, rep.Images, rep.ImageFiles)
	return nil
}

func exportSFT(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("export sft needs DIR")
	}
	format, err := exporter.ParseSFTFormat(c.String("format"))
	if err != nil {
		return usageErr("%v", err)
	}
	if c.IsSet("from") && c.IsSet("select") {
		return usageErr("--from and --select exclude each other")
	}
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	rep, err := exporter.SFT(c.Context, l, m, c.Args().First(), exporter.SFTOptions{Format: format, From: c.String("from"),
		Select: c.String("select"), Window: c.Int("window"), Name: c.String("name")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	fmt.Fprintf(c.App.Writer, "wrote %d conversation(s) of %d trajectory(ies) and %d image(s) from snapshot %s to %s (%s, dataset %s)\n",
		rep.Samples, rep.Trajectories, rep.Images, m.ID[:12], rep.Dir, rep.Format, rep.Name)
	return nil
}

func exportHF(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("export hf needs DIR")
	}
	if c.IsSet("table") == c.IsSet("sql") {
		return usageErr("export hf needs --table or --sql (one of them)")
	}
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	opts := exporter.HFOptions{Table: c.String("table"), SQL: c.String("sql"), ShardRows: c.Int("shard-rows"), Split: c.String("split")}
	if c.IsSet("image") {
		opts.Images = c.StringSlice("image")
	}
	rep, err := exporter.HF(c.Context, l, m, c.Args().First(), opts)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	fmt.Fprintf(c.App.Writer, "wrote %d row(s) in %d shard(s) from snapshot %s to %s (image columns: %v, %d screenshot(s))\n",
		rep.Rows, len(rep.Shards), m.ID[:12], rep.Dir, rep.Images, rep.ImageBlobs)
	return nil
}

func exportVerdicts(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("export verdicts needs OUT.json")
	}
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	rep, err := exporter.Verdicts(c.Context, l, m, c.Args().First())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	fmt.Fprintf(c.App.Writer, "wrote the verdicts of %d trajectory(ies) from snapshot %s to %s\n", rep.Trajectories, m.ID[:12], rep.Out)
	return nil
}
