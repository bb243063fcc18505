// Package cli defines cualake's commands: flag parsing and calls into the
// pipeline, query and trainer packages; no logic of its own.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/lake/s3store" // also registers s3:// lakes
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/schemas"
)

// Exit codes scripts can rely on.
const (
	ExitOK             = 0
	ExitFailure        = 1 // the command failed (bad input, I/O, a query error)
	ExitUsage          = 2 // wrong flags or arguments
	ExitConflict       = 3 // a commit lost an optimistic-concurrency race
	ExitVerifyFailed   = 4 // verify found problems
	ExitNotImplemented = 5 // the command is not built yet
)

// Commands registered by the files of this package, in help order.
var commands []*cli.Command

func register(c ...*cli.Command) { commands = append(commands, c...) }

// ErrNotBuilt marks a command whose stage is not implemented yet.
var ErrNotBuilt = errors.New("not built yet")

var lakeFlag = &cli.StringFlag{
	Name:    "lake",
	Usage:   "lake folder or s3://bucket/prefix",
	EnvVars: []string{"CUALAKE_LAKE"},
	Value:   "./data/lake",
}

// branchFlag selects the lake branch a command reads and commits: every
// command with --lake gets it (withStorageFlags), and openLake binds the
// lake handle to it, so "" refs (--at, --in, --from defaults) are the
// branch's head and every Begin commits to it.
var branchFlag = &cli.StringFlag{Name: "branch", EnvVars: []string{"CUALAKE_BRANCH"},
	Usage: "lake branch to read from and commit to (default main); --at/--in default to its head and accept branch names"}

var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print one JSON object for scripts"}

// storageFlags configure remote lakes; every command that takes --lake
// gets them (see withStorageFlags).
var storageFlags = []cli.Flag{
	&cli.StringFlag{Name: "cache", EnvVars: []string{"CUALAKE_CACHE"}, Category: "remote lakes",
		Usage: "local cache of a remote lake's files (default: the user cache folder, cualake/)"},
	&cli.StringFlag{Name: "cache-max", EnvVars: []string{"CUALAKE_CACHE_MAX"}, Category: "remote lakes",
		Usage: "bound of the cache, least recently used files evicted beyond it (e.g. 10GiB; 0 = unbounded; default 20GiB)"},
	&cli.StringFlag{Name: "s3-endpoint", Category: "remote lakes", Usage: "S3 endpoint URL (default $AWS_ENDPOINT_URL, else AWS)"},
	&cli.StringFlag{Name: "s3-region", Category: "remote lakes", Usage: "S3 region (default $AWS_REGION, else us-east-1)"},
}

// withStorageFlags adds --branch and storageFlags to every command with
// --lake, once.
func withStorageFlags(cmds []*cli.Command) {
	for _, c := range cmds {
		has, done, branch := false, false, false
		for _, f := range c.Flags {
			has = has || f == lakeFlag
			done = done || f == storageFlags[0]
			branch = branch || f.Names()[0] == "branch"
		}
		if has && !done {
			c.Flags = append(c.Flags, storageFlags...)
		}
		if has && !branch {
			c.Flags = append(c.Flags, branchFlag)
		}
		withStorageFlags(c.Subcommands)
	}
}

// lakeOptions reads storageFlags.
func lakeOptions(c *cli.Context) (lake.OpenOptions, error) {
	opt := lake.OpenOptions{CacheDir: c.String("cache"), Endpoint: c.String("s3-endpoint"), Region: c.String("s3-region")}
	if v := c.String("cache-max"); v != "" {
		n, err := s3store.ParseBytes(v)
		if err != nil {
			return opt, usageErr("--cache-max: %v", err)
		}
		opt.CacheMaxBytes = n
	}
	return opt, nil
}

// App is the cualake command with every subcommand.
func App() *cli.App {
	sort.SliceStable(commands, func(a, b int) bool { return commands[a].Name < commands[b].Name })
	withStorageFlags(commands)
	if handOff != nil {
		routed.Do(func() { routeTorch(commands, handOff) })
	}
	return &cli.App{
		Name:  "cualake",
		Usage: "a data lake toolkit for online RL of computer-use agents",
		Description: `Every artefact of the RL loop lives as Parquet tables in versioned, content-addressed
snapshots; stages read one snapshot and commit the next; SQL runs over any snapshot.

Example:
   cualake lake init && cualake import osworld-tasks ../shared/data/osworld
   cualake query "select domain, count(*) from tasks group by 1"`,
		Commands:             commands,
		Version:              lake.CodeVersion, // what a lake's manifests record as code_version
		EnableBashCompletion: true,
		ExitErrHandler:       func(*cli.Context, error) {},
	}
}

// routed applies routeTorch to commands once, however often App is built.
var routed sync.Once

// StageApp is a thin binary running one stage command, e.g. `segment`.
func StageApp(name string) *cli.App {
	app := App()
	for _, c := range app.Commands {
		if c.Name == name {
			return &cli.App{Name: name, Usage: c.Usage, Description: c.Description, Flags: c.Flags,
				Version: lake.CodeVersion, Action: c.Action, ExitErrHandler: func(*cli.Context, error) {}}
		}
	}
	return &cli.App{Name: name, Action: func(*cli.Context) error { return fmt.Errorf("%s: %w", name, ErrNotBuilt) }}
}

// Main runs app and exits with a meaningful code; errors are one line on
// stderr, never a stack trace.
func Main(app *cli.App) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "%s: internal error: %v\n", app.Name, r)
			os.Exit(ExitFailure)
		}
	}()
	mainApp, mainArgs = app, os.Args
	err := RunArgs(context.Background(), app, os.Args)
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", app.Name, err)
	os.Exit(ExitCode(err))
}

// RunArgs runs one command line (args[0] is the program): flags after the
// positional arguments are moved before them (Interspersed), and a word
// shaped like an unknown flag there is a usage error (StrayFlag) rather
// than one more argument.
func RunArgs(ctx context.Context, app *cli.App, args []string) error {
	if stray := StrayFlag(app, args); stray != "" {
		return usageErr("unknown flag %s after the arguments (see --help; a word that starts with -- belongs after a lone --)", stray)
	}
	return app.RunContext(ctx, Interspersed(app, args))
}

// ExitCode maps an error to an exit code.
func ExitCode(err error) int {
	var ec cli.ExitCoder
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.Is(err, lake.ErrConflict):
		return ExitConflict
	case errors.Is(err, ErrNotBuilt):
		return ExitNotImplemented
	case errors.Is(err, errUsage):
		return ExitUsage
	}
	return ExitFailure
}

var errUsage = errors.New("usage")

func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// intFlag returns the int flag name when it lies in [lo, hi], else a usage
// error naming the flag and the range: values out of range must not run
// silently (a negative limit meaning "all") nor wrap when narrowed to int32.
func intFlag(c *cli.Context, name string, lo, hi int) (int, error) {
	v := c.Int(name)
	if v < lo || v > hi {
		if hi == math.MaxInt {
			return v, usageErr("--%s is %d, want >= %d", name, v, lo)
		}
		return v, usageErr("--%s is %d, want %d..%d", name, v, lo, hi)
	}
	return v, nil
}

// maxWorkers bounds the --workers flags: each worker is a goroutine with its
// own environment or buffers, so an absurd count only exhausts memory.
const maxWorkers = loop.MaxWorkers

// beginOnSnapshot opens the --lake lake and begins a commit on --in (the
// branch head by default), which must be a snapshot: on an empty lake it
// returns an error saying empty.
func beginOnSnapshot(c *cli.Context, empty string) (*lake.Lake, *lake.Txn, error) {
	l, err := openLake(c, false)
	if err != nil {
		return nil, nil, err
	}
	tx, err := l.Begin(c.Context, c.String("in"))
	if err != nil {
		return nil, nil, err
	}
	if tx.Parent() == "" {
		return nil, nil, errors.New(empty)
	}
	return l, tx, nil
}

// openLake opens the --lake folder or URL (s3://bucket/prefix), bound to
// --branch; create initialises it if needed.
func openLake(c *cli.Context, create bool) (*lake.Lake, error) {
	opt, err := lakeOptions(c)
	if err != nil {
		return nil, err
	}
	l, err := lake.OpenURL(c.Context, c.String("lake"), create, opt)
	if err != nil {
		return nil, err
	}
	return onBranch(l, c.String("branch"))
}

// onBranch binds l to the --branch value name ("" keeps main).
func onBranch(l *lake.Lake, name string) (*lake.Lake, error) {
	if name == "" {
		return l, nil
	}
	b, err := l.OnBranch(name)
	if err != nil {
		return nil, usageErr("--branch: %v", err)
	}
	return b, nil
}

// snapshotAt opens the lake and resolves --at (or --in).
func snapshotAt(c *cli.Context, flag string) (*lake.Lake, *lake.Manifest, error) {
	l, err := openLake(c, false)
	if err != nil {
		return nil, nil, err
	}
	m, err := l.At(c.Context, c.String(flag))
	if err != nil {
		return nil, nil, err
	}
	return l, m, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// engineAt opens a query engine on --at.
func engineAt(c *cli.Context) (*query.Engine, error) {
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return nil, err
	}
	return query.Open(c.Context, l, m)
}

// tableColumns lists the tables and columns of every schema.
func tableColumns() []map[string]any {
	var out []map[string]any
	for _, info := range schemas.All() {
		var cols []map[string]any
		for _, f := range info.Arrow().Fields() {
			cols = append(cols, map[string]any{"name": f.Name, "type": f.Type.String(), "nullable": f.Nullable})
		}
		out = append(out, map[string]any{"table": info.Name, "version": info.Version, "key": info.Key, "doc": info.Doc, "columns": cols})
	}
	return out
}
