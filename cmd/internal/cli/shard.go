package cli

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/shard"
)

// Sharding plumbing shared by the stage commands.
//
// A stage whose work splits by key takes shardFlag and, in its action:
//
//	spec, err := parseShard(c, "segment")          // refuses whole-input stages
//	keys = shard.Filter(spec, keys, keyOf)          // only this shard's keys
//	out := shard.NewOutput(l, tx, spec)             // instead of lake.NewAppender
//	t := shard.NewTable(out, schemas.Trajectories, shard.TableOptions{Chunk: 1 << 16})
//	...t.Add(rows...)...
//	res, err := out.Finish(ctx, lake.CommitInfo{...}) // instead of tx.Commit
//	if res.Fragment != nil { return printFragment(c, res.Fragment, nil) }
//
// A whole-input stage (sample, train) adds shardFlag too and calls
// parseShard, which refuses --shard with the reason.

// shardFlag is --shard I/N.
var shardFlag = &cli.StringFlag{Name: "shard",
	Usage: "I/N: process only shard I of N (0-based) of the keys and write a fragment instead of committing; \"cualake lake merge\" commits the N fragments"}

// parseShard reads --shard for stage; whole-input stages refuse it.
func parseShard(c *cli.Context, stage string) (shard.Spec, error) {
	spec, err := shard.Parse(c.String("shard"))
	if err != nil {
		return spec, usageErr("--shard: %v", err)
	}
	if err := shard.CheckShardable(stage, spec); err != nil {
		return spec, usageErr("%v", err)
	}
	return spec, nil
}

// printFragment reports a written fragment and how to merge it.
func printFragment(c *cli.Context, f *shard.Fragment, extra map[string]any) error {
	in := f.Input
	if in == "" {
		in = "empty"
	}
	merge := fmt.Sprintf("cualake lake merge --stage %s --in %s --shards %d", f.Stage, in, f.Of)
	if c.Bool("json") {
		out := map[string]any{"fragment": f.Key(), "shard": f.Shard, "of": f.Of, "stage": f.Stage, "input": f.Input,
			"params_hash": f.ParamsHash, "merge": merge}
		rows := map[string]int64{}
		for name, t := range f.Tables {
			rows[name] = t.Rows
		}
		out["rows"] = rows
		for k, v := range extra {
			out[k] = v
		}
		return printJSON(c.App.Writer, out)
	}
	var parts []string
	for _, name := range sortedKeys(f.Tables) {
		parts = append(parts, fmt.Sprintf("%s %d", name, f.Tables[name].Rows))
	}
	fmt.Fprintf(c.App.Writer, "%s shard %d/%d: fragment %s (rows: %s)\nwhen all %d shards are done: %s\n",
		f.Stage, f.Shard, f.Of, f.Key(), strings.Join(parts, ", "), f.Of, merge)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func init() {
	// `lake merge` and `lake fragments` join the lake command, registered
	// by lake.go: Go runs a package's init functions in file-name order, so
	// it exists here (TestLakeMergeIsRegistered checks).
	for _, c := range commands {
		if c.Name == "lake" {
			c.Subcommands = append(c.Subcommands, lakeMergeCommand, lakeFragmentsCommand)
		}
	}
}

var lakeMergeCommand = &cli.Command{
	Name:  "merge",
	Usage: "commit the N fragments of a sharded stage run as one snapshot",
	Description: `Checks that all N fragments are present, built from the same input snapshot and parameters,
and commits them as the snapshot an unsharded run would have committed (same data files,
same id). Refuses when a shard is missing or duplicated, or a fragment differs.

Example:
   for i in 0 1 2; do cualake rollout --policy oracle --n 1 --shard $i/3 & done; wait
   cualake lake merge --stage rollout --in main --shards 3 --clean`,
	Flags: []cli.Flag{lakeFlag, jsonFlag,
		&cli.StringFlag{Name: "stage", Required: true, Usage: "the stage that wrote the fragments (rollout, segment, ...)"},
		&cli.StringFlag{Name: "in", Usage: "the input snapshot the shards read (default main; \"empty\" for an empty lake)"},
		&cli.IntFlag{Name: "shards", Usage: "N, the number of shards (default: the only N present)"},
		&cli.StringFlag{Name: "params", Usage: "parameters hash (or prefix) when fragments of several runs share the input"},
		&cli.BoolFlag{Name: "clean", Usage: "remove the fragments once committed"},
	},
	Action: lakeMerge,
}

func lakeMerge(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("lake merge takes no arguments (got %q)", c.Args().First())
	}
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	res, err := shard.Merge(c.Context, l, shard.MergeOptions{Stage: c.String("stage"), Input: c.String("in"),
		Params: c.String("params"), Shards: c.Int("shards"), Clean: c.Bool("clean")})
	if err != nil {
		if errors.Is(err, shard.ErrIncomplete) {
			return cli.Exit("lake merge: "+err.Error(), ExitFailure)
		}
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, res)
	}
	var parts []string
	for _, name := range sortedKeys(res.Rows) {
		parts = append(parts, fmt.Sprintf("%s %d", name, res.Rows[name]))
	}
	fmt.Fprintf(c.App.Writer, "merged %d shards of %s: %s\nsnapshot %s\n", res.Shards, res.Set.Stage, strings.Join(parts, ", "), res.Snapshot)
	if res.Removed > 0 {
		fmt.Fprintf(c.App.Writer, "removed %d fragment objects\n", res.Removed)
	}
	return nil
}

var lakeFragmentsCommand = &cli.Command{
	Name:  "fragments",
	Usage: "list the shard fragments waiting in the lake, or remove one run's",
	Description: `Example:
   cualake lake fragments
   cualake lake fragments --stage rollout --json
   cualake lake fragments --remove fragments/rollout/empty/0123456789abcdef/`,
	Flags: []cli.Flag{lakeFlag, jsonFlag,
		&cli.StringFlag{Name: "stage", Usage: "only this stage's"},
		&cli.StringFlag{Name: "remove", Usage: "delete the fragment run in this folder (as listed)"},
	},
	Action: lakeFragments,
}

func lakeFragments(c *cli.Context) error {
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	if dir := c.String("remove"); dir != "" {
		if !strings.HasSuffix(dir, "/") {
			dir += "/"
		}
		n, err := shard.RemoveSet(c.Context, l, dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "removed %d objects under %s\n", n, dir)
		return nil
	}
	sets, err := shard.List(c.Context, l, c.String("stage"))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, sets)
	}
	if len(sets) == 0 {
		fmt.Fprintln(c.App.Writer, "no fragments")
		return nil
	}
	for _, s := range sets {
		fmt.Fprintf(c.App.Writer, "%s\n  %s\n", s.Dir, s.Describe())
	}
	return nil
}
