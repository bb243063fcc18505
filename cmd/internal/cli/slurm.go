package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	slurmexamples "github.com/cualake/cualake/examples/slurm"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/pipeline/slurm"
)

func init() {
	register(&cli.Command{
		Name:  "slurm",
		Usage: "run stages on a Slurm cluster: sharded job arrays and their merge",
		Description: `A shardable stage (one that takes --shard) runs as a job array, one task per shard, each
writing a fragment; a merge job that depends on the array (afterok) commits the fragments as
one snapshot, the one an unsharded run commits. Other stages run as one job. The scripts
come from examples/slurm/*.sbatch.tmpl (embedded; --templates DIR for edited copies).

Example:
   cualake slurm submit --stage rollout --shards 16 --partition gpu --time 2:00:00 \
       --args "--policy checkpoint --n 8" -- --account=rl --mem=16G
   cualake slurm submit --stage rollout --shards 16 --rerun 3,11 --args "--policy checkpoint --n 8"
   cualake slurm submit --stage sample --args "--sampler frontier --batch 64" --wait
   cualake slurm templates ./my-templates`,
		Subcommands: []*cli.Command{{
			Name:      "submit",
			Usage:     "write the sbatch scripts of a stage and submit them (prints the job ids)",
			ArgsUsage: "[-- EXTRA SBATCH OPTIONS]",
			Description: `Example:
   cualake slurm submit --stage rollout --shards 4 --args "--policy oracle --n 2" --dry-run
   cualake slurm submit --stage rollout --shards 4 --args "--policy oracle --n 2" --wait -- --mem=4G`,
			Flags: []cli.Flag{lakeFlag, jsonFlag,
				&cli.StringFlag{Name: "stage", Required: true, Usage: "the cualake command to run, e.g. rollout, segment, \"audit health\""},
				&cli.StringFlag{Name: "args", Usage: "the stage's own flags, as one shell-quoted string"},
				&cli.IntFlag{Name: "shards", Usage: "N: a job array of N shards and a merge (0: one job)"},
				&cli.StringFlag{Name: "in", Usage: "input snapshot of the shards (default main, resolved now)"},
				&cli.StringFlag{Name: "partition", Usage: "Slurm partition"},
				&cli.StringFlag{Name: "time", Usage: "time limit of each shard (Slurm format, e.g. 2:00:00)"},
				&cli.StringFlag{Name: "rerun", Usage: "only these shards (comma-separated), e.g. after some failed; the merge follows"},
				&cli.StringFlag{Name: "dir", Value: "out/slurm", Usage: "base folder of scripts and logs (must be visible from the nodes)"},
				&cli.StringFlag{Name: "binary", Usage: "cualake binary as the nodes see it (default: this one)"},
				&cli.StringFlag{Name: "templates", Usage: "folder of edited *.sbatch.tmpl (default: the embedded ones)"},
				&cli.BoolFlag{Name: "keep-fragments", Usage: "do not remove the fragments after the merge"},
				&cli.BoolFlag{Name: "dry-run", Usage: "print the scripts and sbatch commands, submit nothing"},
				&cli.BoolFlag{Name: "wait", Usage: "wait for the jobs and exit non-zero if they failed"},
			},
			Action: slurmSubmit,
		}, {
			Name:        "templates",
			Usage:       "copy the embedded sbatch templates into a folder to edit them",
			ArgsUsage:   "DIR",
			Description: "Example: cualake slurm templates ./slurm-templates && cualake slurm submit --templates ./slurm-templates ...",
			Action:      slurmTemplates,
		}},
	})
}

// findCommand returns the command at a path such as ["audit", "health"].
func findCommand(path []string) *cli.Command {
	cmds := commands
	var found *cli.Command
	for _, name := range path {
		if found = subcommand(cmds, name); found == nil {
			return nil
		}
		cmds = found.Subcommands
	}
	return found
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// shardableCommand reports whether a command takes --shard and can be
// sharded (sample and train take the flag only to refuse it). words is the
// command path, optionally followed by its flags and arguments, which some
// stages need to decide (synthesize with the openai proposer cannot be
// sharded).
func shardableCommand(words []string) bool {
	path, args := splitCommand(words)
	c := findCommand(path)
	if c == nil || len(path) == 0 || shard.CheckShardable(path[0], shard.Spec{Index: 0, Count: 2}) != nil {
		return false
	}
	for _, f := range c.Flags {
		if contains(f.Names(), "shard") {
			return shardFlagRefusal(c, path, args) == nil
		}
	}
	return false
}

// shardRefusals are stages that take --shard but refuse it for some of
// their flags; each reads the flags (by name) and says why. Stage commands
// register theirs in init.
var shardRefusals = map[string]func(flag func(name string) string) error{}

// shardFlagRefusal applies a stage's shardRefusals entry to its flags.
func shardFlagRefusal(c *cli.Command, path, args []string) error {
	refuse := shardRefusals[path[0]]
	if refuse == nil {
		return nil
	}
	set := flag.NewFlagSet(strings.Join(path, " "), flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range c.Flags {
		if err := f.Apply(set); err != nil {
			return err
		}
	}
	if err := set.Parse(args); err != nil {
		return err
	}
	return refuse(func(name string) string {
		if f := set.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	})
}

// splitCommand splits words into the command path (the words that name
// commands and subcommands) and the rest.
func splitCommand(words []string) (path, rest []string) {
	cmds := commands
	for i, w := range words {
		found := subcommand(cmds, w)
		if found == nil {
			return words[:i], words[i:]
		}
		cmds = found.Subcommands
	}
	return words, nil
}

// splitArgs splits a shell-quoted string into words ('...', "...", \x).
func splitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, inWord = ch, true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// jobLake is the lake location as the jobs see it: URLs as they are,
// folders made absolute.
func jobLake(loc string) (string, error) {
	if lake.IsURL(loc) {
		return loc, nil
	}
	return filepath.Abs(loc)
}

// jobEnv passes the non-secret remote-lake settings given as flags on to
// the jobs (credentials travel in the environment sbatch exports).
func jobEnv(c *cli.Context) []string {
	var env []string
	if v := c.String("s3-endpoint"); v != "" {
		env = append(env, "AWS_ENDPOINT_URL="+v)
	}
	if v := c.String("s3-region"); v != "" {
		env = append(env, "AWS_REGION="+v)
	}
	if v := c.String("cache-max"); v != "" {
		env = append(env, "CUALAKE_CACHE_MAX="+v)
	}
	if v := c.String("branch"); v != "" {
		env = append(env, "CUALAKE_BRANCH="+v) // the jobs read and commit the same branch
	}
	return env
}

func binaryPath(c *cli.Context) (string, error) {
	if b := c.String("binary"); b != "" {
		return filepath.Abs(b)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("--binary: cannot find this executable: %w", err)
	}
	return exe, nil
}

func slurmSubmit(c *cli.Context) error {
	ctx := c.Context
	path := strings.Fields(c.String("stage"))
	cmd := findCommand(path)
	if len(path) == 0 || cmd == nil || cmd.Action == nil {
		return usageErr("--stage %q: not a cualake command that runs a stage", c.String("stage"))
	}
	args, err := splitArgs(c.String("args"))
	if err != nil {
		return usageErr("--args: %v", err)
	}
	rest, inRef, _ := slurm.TakeFlag(args, "in")
	if c.IsSet("in") {
		inRef = c.String("in")
	}
	n := c.Int("shards")
	switch {
	case n < 0:
		return usageErr("--shards: want N >= 0")
	case n > 0 && !shardableCommand(path):
		if err := shard.CheckShardable(path[0], shard.Spec{Index: 0, Count: max(n, 2)}); err != nil {
			if n == 1 {
				n = 0 // one shard of a whole-input stage is just the stage
				break
			}
			return usageErr("%v", err)
		}
		return usageErr("%s does not take --shard yet; submit it without --shards", strings.Join(path, " "))
	case n > 0:
		if err := shardFlagRefusal(cmd, path, args); err != nil {
			if n == 1 {
				n = 0
				break
			}
			return usageErr("%v", err)
		}
	}
	lakeLoc, err := jobLake(c.String("lake"))
	if err != nil {
		return err
	}
	bin, err := binaryPath(c)
	if err != nil {
		return err
	}
	j := slurm.Job{Command: append(append([]string{}, path...), args...), Words: len(path), Lake: lakeLoc, Binary: bin,
		Partition: c.String("partition"), Time: c.String("time"), Extra: c.Args().Slice(), Env: jobEnv(c),
		Clean: !c.Bool("keep-fragments")}
	if t := c.String("templates"); t != "" {
		if st, err := os.Stat(t); err != nil {
			return usageErr("--templates: %v", err)
		} else if !st.IsDir() {
			return usageErr("--templates %s: not a folder", t)
		}
		j.Templates = templateDir{os.DirFS(t), t}
	}
	if n > 0 {
		j.Command, j.Shards = append(append([]string{}, path...), rest...), n
		// The shards and the merge must read the same snapshot, whatever
		// main does while they wait in the queue: resolve it now.
		// A dry run creates nothing: a lake that does not exist yet is empty.
		l, err := openLake(c, !c.Bool("dry-run"))
		switch {
		case err == nil:
			if j.Input, err = resolveInput(ctx, l, inRef); err != nil {
				return err
			}
		case !c.Bool("dry-run") || !errors.Is(err, lake.ErrNotALake):
			return err
		}
		if r := c.String("rerun"); r != "" {
			for _, p := range strings.Split(r, ",") {
				i, err := strconv.Atoi(strings.TrimSpace(p))
				if err != nil {
					return usageErr("--rerun %q: want shard numbers such as 3,11", r)
				}
				j.Rerun = append(j.Rerun, i)
			}
		}
	} else if c.String("rerun") != "" {
		return usageErr("--rerun needs --shards")
	}
	if c.Bool("dry-run") {
		j.Dir, _ = filepath.Abs(filepath.Join(c.String("dir"), "DRY-RUN"))
		s, err := slurm.Render(j)
		if err != nil {
			return err
		}
		w := c.App.Writer
		for _, p := range []struct{ name, body string }{{"shard.sbatch", s.Array}, {"merge.sbatch", s.Merge}, {"stage.sbatch", s.Stage}} {
			if p.body != "" {
				fmt.Fprintf(w, "# ===== %s\n%s\n", p.name, p.body)
			}
		}
		extra := ""
		if len(j.Extra) > 0 {
			extra = strings.Join(j.Extra, " ") + " "
		}
		if s.Stage != "" {
			fmt.Fprintf(w, "# ===== would run\nsbatch --parsable %sstage.sbatch\n", extra)
		} else {
			fmt.Fprintf(w, "# ===== would run\nsbatch --parsable %sshard.sbatch   # -> ARRAY\nsbatch --parsable %s--dependency=afterok:ARRAY --kill-on-invalid-dep=yes merge.sbatch\n", extra, extra)
		}
		return nil
	}
	if j.Dir, err = slurm.NewDir(c.String("dir"), strings.Join(path, "-")); err != nil {
		return err
	}
	sub, err := slurm.Submit(ctx, j, slurm.Exec)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c.App.Writer, sub); err != nil {
			return err
		}
	} else if sub.ArrayJob != "" {
		fmt.Fprintf(c.App.Writer, "submitted %s: array job %s (%d shards), merge job %s (afterok:%s)\nscripts and logs: %s\n",
			sub.Stage, sub.ArrayJob, n, sub.MergeJob, sub.ArrayJob, sub.Dir)
	} else {
		fmt.Fprintf(c.App.Writer, "submitted %s: job %s\nscripts and logs: %s\n", sub.Stage, sub.Job, sub.Dir)
	}
	if !c.Bool("wait") {
		return nil
	}
	if err := slurm.WaitSubmission(ctx, slurm.Exec, sub, pollInterval()); err != nil {
		return err
	}
	if !c.Bool("json") {
		l, err := openLake(c, false)
		if err == nil {
			head, _ := l.Head(ctx)
			fmt.Fprintf(c.App.Writer, "done; main is at %s\n", head)
		}
	}
	return nil
}

// resolveInput turns --in into the snapshot id the shards read ("" for an
// empty lake).
func resolveInput(ctx context.Context, l *lake.Lake, ref string) (string, error) {
	if ref == "" || ref == lake.MainRef {
		return l.Head(ctx)
	}
	return l.Resolve(ctx, ref)
}

// pollInterval is how often --wait asks Slurm (CUALAKE_SLURM_POLL, e.g. 500ms).
func pollInterval() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("CUALAKE_SLURM_POLL")); err == nil && d > 0 {
		return d
	}
	return 2 * time.Second
}

// SlurmOptions configure slurmExecutor.
type SlurmOptions struct {
	Shards          int    // N for every shardable stage
	Partition, Time string // as for slurm submit
	Extra           []string
	Dir             string // base folder of scripts and logs (default out/slurm)
	Binary          string // default: this executable
}

// checkExecutor checks --executor and --shards of run and experiment run
// before the lake is opened (created) or a job submitted: --shards 0 or
// below used to go on to sbatch, every stage as one job.
func checkExecutor(c *cli.Context) error {
	switch c.String("executor") {
	case "local":
	case "slurm":
		if n := c.Int("shards"); n < 1 {
			return usageErr("--shards is %d, want >= 1 (shards per shardable stage; 1 runs each stage as one job)", n)
		}
	default:
		return usageErr("--executor: want local or slurm")
	}
	return nil
}

// slurmExecutor is the loop.Executor of `cualake run --executor slurm`:
// each step of the loop runs as Slurm jobs on the lake of c (--lake), a
// shardable stage as N shards and a merge.
func slurmExecutor(c *cli.Context, opt SlurmOptions) (loop.Executor, error) {
	return slurmExecutorOn(c, opt, c.String("branch"))
}

// slurmExecutorOn is slurmExecutor with every job reading and committing
// branch ("" is main) instead of --branch: an experiment's variants.
func slurmExecutorOn(c *cli.Context, opt SlurmOptions, branch string) (loop.Executor, error) {
	l, err := openLake(c, true)
	if err != nil {
		return nil, err
	}
	if l, err = onBranch(l, branch); err != nil {
		return nil, err
	}
	env := []string{}
	for _, e := range jobEnv(c) {
		if !strings.HasPrefix(e, "CUALAKE_BRANCH=") {
			env = append(env, e)
		}
	}
	if branch != "" {
		env = append(env, "CUALAKE_BRANCH="+branch)
	}
	loc, err := jobLake(c.String("lake"))
	if err != nil {
		return nil, err
	}
	bin := opt.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if opt.Dir == "" {
		opt.Dir = "out/slurm"
	}
	return slurm.Executor(slurm.Config{Lake: loc, Binary: bin, Partition: opt.Partition, Time: opt.Time, Extra: opt.Extra,
		Env: env, Dir: opt.Dir, Shards: opt.Shards, Shardable: shardableCommand, Poll: pollInterval(), Log: c.App.ErrWriter,
		Resolve: func(ctx context.Context, ref string) (string, error) { return resolveInput(ctx, l, ref) }}), nil
}

func slurmTemplates(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("slurm templates DIR")
	}
	dir := c.Args().First()
	if err := outfile.CheckOutsideLakes(dir, lakeFolders(c)...); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	for _, name := range []string{"shard.sbatch.tmpl", "merge.sbatch.tmpl", "stage.sbatch.tmpl"} {
		b, err := slurmexamples.FS.ReadFile(name)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, name)
		// O_EXCL: an existing file, or a link of any kind, is never written.
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists; not overwriting it", p)
		}
		if err != nil {
			return err
		}
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	fmt.Fprintf(c.App.Writer, "templates in %s; use them with --templates %s\n", dir, dir)
	return nil
}

// templateDir is a --templates folder whose open errors name it: a missing
// template said only "open stage.sbatch.tmpl", not where it was looked for.
type templateDir struct {
	fs.FS
	dir string
}

func (d templateDir) Open(name string) (fs.File, error) {
	f, err := d.FS.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--templates %s: %w", d.dir, err)
	}
	return f, nil
}
