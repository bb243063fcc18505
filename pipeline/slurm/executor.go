package slurm

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/cualake/cualake/pipeline/loop"
)

// Config configures Executor.
type Config struct {
	// Lake, Binary, Partition, Time, Extra, Env, Templates: as in Job.
	Lake, Binary, Partition, Time string
	Extra, Env                    []string
	Templates                     fs.FS
	// Dir is the base folder; each step gets a folder of its own under it.
	Dir string
	// Shards is N for every shardable stage; StageShards overrides it per
	// stage name (0 there runs the stage as one job).
	Shards      int
	StageShards map[string]int
	// Shardable reports whether a command takes --shard (the CLI knows);
	// it gets the command path followed by the step's flags, since some
	// stages refuse --shard for some flags.
	Shardable func(command []string) bool
	// Resolve turns a sharded step's --in (or "" when it has none: main's
	// head) into the snapshot id every shard and the merge will use ("" for
	// an empty lake), at submission.
	Resolve func(ctx context.Context, ref string) (string, error)
	// Run runs sbatch, squeue and scontrol (nil: Exec).
	Run Runner
	// Poll is how often to ask Slurm whether a job ended (0: 2s).
	Poll time.Duration
	// Log receives one line per submission (nil: discarded).
	Log io.Writer
}

// Executor returns a loop.Executor that runs each stage command of the RL
// loop as Slurm jobs and returns when they ended: a shardable stage as a
// job array of N shards and a dependent merge, any other as one job. The
// loop's steps thus run one after another, each spread over the cluster.
func Executor(cfg Config) loop.Executor {
	run := cfg.Run
	if run == nil {
		run = Exec
	}
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	return func(ctx context.Context, command, flags []string) error {
		if len(command) == 0 {
			return fmt.Errorf("slurm executor: empty command")
		}
		n := cfg.Shards
		if v, ok := cfg.StageShards[command[0]]; ok {
			n = v
		}
		if cfg.Shardable == nil || !cfg.Shardable(append(append([]string{}, command...), flags...)) {
			n = 0
		}
		j := Job{Command: append(append([]string{}, command...), flags...), Words: len(command), Lake: cfg.Lake,
			Binary: cfg.Binary, Partition: cfg.Partition, Time: cfg.Time, Extra: cfg.Extra, Env: cfg.Env,
			Templates: cfg.Templates, Clean: true}
		if n > 1 {
			args, in, hasIn := TakeFlag(j.Command[j.Words:], "in")
			j.Command = append(j.Command[:j.Words:j.Words], args...)
			j.Shards = n
			j.Input = in
			if cfg.Resolve != nil {
				id, err := cfg.Resolve(ctx, in)
				if err != nil {
					return err
				}
				j.Input = id
			} else if !hasIn {
				return fmt.Errorf("slurm executor: %s is sharded but nothing resolves its input snapshot", command[0])
			}
		}
		dir, err := NewDir(cfg.Dir, strings.Join(command, "-"))
		if err != nil {
			return err
		}
		j.Dir = dir
		sub, err := Submit(ctx, j, run)
		if err != nil {
			return err
		}
		if sub.ArrayJob != "" {
			fmt.Fprintf(log, "  slurm: %s as array job %s (%d shards), merge job %s; logs in %s\n", sub.Stage, sub.ArrayJob, n, sub.MergeJob, dir)
		} else {
			fmt.Fprintf(log, "  slurm: %s as job %s; log in %s\n", sub.Stage, sub.Job, dir)
		}
		return WaitSubmission(ctx, run, sub, cfg.Poll)
	}
}

// TakeFlag removes --name VALUE (or --name=VALUE) from args and returns
// the rest and the value.
func TakeFlag(args []string, name string) (rest []string, value string, found bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--"+name || a == "-"+name:
			if i+1 < len(args) {
				value, found = args[i+1], true
				i++
				continue
			}
		case strings.HasPrefix(a, "--"+name+"=") || strings.HasPrefix(a, "-"+name+"="):
			_, value, _ = strings.Cut(a, "=")
			found = true
			continue
		}
		rest = append(rest, a)
	}
	return rest, value, found
}
