package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// TorchBinary is the executable that runs the model: the same commands as
// cualake, built with libtorch (gotch). `make build` puts it next to
// bin/cualake, which is built without libtorch (-tags notorch) so that
// commands that never load a model do not pay libtorch's start-up.
const TorchBinary = "cualake-torch"

// torchEnv overrides where TorchBinary is looked for (default: the folder
// of the running executable).
const torchEnv = "CUALAKE_TORCH"

// torchCommands are the invocations that load a model, by top-level
// command name; each says from its flags whether this run needs libtorch.
// The torch-free binary hands exactly these to TorchBinary; to route a new
// command, add it here.
var torchCommands = map[string]func(c *cli.Context) bool{
	"train": always,
	// run executes every stage of the loop in this process, train included.
	"run": always,
	// experiment run runs the loop of each branch (in-process with one
	// worker); report and list only read tables.
	"experiment": func(c *cli.Context) bool { return c.Command != nil && c.Command.Name == "run" },
	"rollout":    func(c *cli.Context) bool { return isCheckpointRef(c.String("policy")) },
	// segment, view and ui never load a model: the only tokenizer is
	// tokenizer.json (a checkpoint's vocabulary was the encoder-decoder's,
	// removed after 7878f89; they refuse it without libtorch).
}

func always(*cli.Context) bool { return true }

// isCheckpointRef reports whether a --policy or --tokenizer value names a
// checkpoint ("checkpoint" or "checkpoint:VERSION").
func isCheckpointRef(v string) bool { return v == "checkpoint" || strings.HasPrefix(v, "checkpoint:") }

// handOff, when set (the torch-free build), runs an invocation that needs
// libtorch in TorchBinary instead of this process.
var handOff func(c *cli.Context) error

// mainApp and mainArgs are the app Main runs and its command line, the one
// handed to TorchBinary. An App run in-process (tests, the loop's local
// executor) is not mainApp and cannot be handed off: its parent command
// belongs in torchCommands.
var (
	mainApp  *cli.App
	mainArgs []string
)

// routeTorch wraps the Action of every command in torchCommands, and of
// their subcommands, so that a run needing libtorch goes to to(c). It is
// applied once, by App.
func routeTorch(cmds []*cli.Command, to func(c *cli.Context) error) {
	for _, c := range cmds {
		if need, ok := torchCommands[c.Name]; ok {
			wrapActions(c, need, to)
		}
	}
}

func wrapActions(c *cli.Command, need func(*cli.Context) bool, to func(*cli.Context) error) {
	if act := c.Action; act != nil {
		c.Action = func(ctx *cli.Context) error {
			if need(ctx) {
				return to(ctx)
			}
			return act(ctx)
		}
	}
	for _, s := range c.Subcommands {
		wrapActions(s, need, to)
	}
}

// torchPath is where TorchBinary is: $CUALAKE_TORCH, else next to the
// running executable.
func torchPath() (string, error) {
	if p := os.Getenv(torchEnv); p != "" {
		return p, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", TorchBinary, err)
	}
	return filepath.Join(filepath.Dir(self), TorchBinary), nil
}

// execTorch replaces this process with TorchBinary on the same command
// line, environment and standard streams, so its output and exit code are
// the command's. argv[0] keeps this binary's name, so a stage binary
// (bin/train) is still that stage there.
func execTorch(c *cli.Context) error {
	name := c.App.Name // a stage binary's root action
	if c.Command != nil && c.Command.FullName() != "" {
		name = c.Command.FullName()
	}
	if c.App != mainApp || len(mainArgs) == 0 {
		return fmt.Errorf("%s needs libtorch, which this build lacks, and runs in-process here: run it with %s (or route the command that runs it in torchCommands)", name, TorchBinary)
	}
	path, err := torchPath()
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s needs libtorch, which runs in %s: not found (build it with `make build`, or set $%s)", name, path, torchEnv)
		}
		return fmt.Errorf("%s needs libtorch: %w", name, err)
	}
	argv := append([]string{filepath.Base(mainArgs[0])}, mainArgs[1:]...)
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("%s needs libtorch: starting %s: %w", name, path, err)
	}
	return nil // not reached: Exec replaced the process
}
