package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/server"
	"github.com/cualake/cualake/schemas"
)

func init() {
	register(&cli.Command{
		Name:  "simdesk",
		Usage: "the embedded desktop simulator: its task pool and OSWorld's server protocol",
		Description: `Example:
   cualake simdesk pool                 # commit the built-in task pool as the tasks table
   cualake simdesk serve --port 5000    # OSWorld's desktop server API over the simulator`,
		Subcommands: []*cli.Command{{
			Name:  "pool",
			Usage: "commit the simulator's built-in task pool (tasks with oracles, train/heldout split)",
			Description: `Replaces the tasks table with the built-in pool plus any non-seed tasks already there
(synthesized or imported tasks are kept).

Example: cualake simdesk pool --json`,
			Flags:  []cli.Flag{lakeFlag, jsonFlag},
			Action: runSimdeskPool,
		}, {
			Name:  "serve",
			Usage: "serve the simulator with OSWorld's desktop server HTTP API",
			Description: `Endpoints as OSWorld's desktop_env/server/main.py: /screenshot, /accessibility, /execute, /setup/...,
/platform, /cursor_position, /screen_size, ...; /simdesk/... for reset, state and judging.

Example: cualake simdesk serve --port 5000 --seed 1`,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "host", Value: "127.0.0.1", Usage: "address to listen on"},
				&cli.IntFlag{Name: "port", Value: 5000, Usage: "port"},
				&cli.Int64Flag{Name: "seed", Usage: "simulator seed"},
				&cli.IntFlag{Name: "width", Value: simdesk.DefaultWidth, Usage: "screen width"},
				&cli.IntFlag{Name: "height", Value: simdesk.DefaultHeight, Usage: "screen height"},
			},
			Action: runSimdeskServe,
		}},
	})
}

func runSimdeskPool(c *cli.Context) error {
	ctx := c.Context
	l, err := openLake(c, true)
	if err != nil {
		return err
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		return err
	}
	if err := simdesk.PoolError(); err != nil {
		return fmt.Errorf("built-in pool: %w", err)
	}
	rows := simdesk.Pool()
	builtin := map[string]bool{}
	for _, t := range rows {
		builtin[t.TaskID] = true
	}
	kept := 0
	if tx.Parent() != "" {
		old, err := lake.ReadTable(ctx, l, tx.Base(), schemas.Tasks)
		if err != nil {
			return err
		}
		for _, t := range old {
			if !builtin[t.TaskID] && t.Source != schemas.SourceSeed {
				rows = append(rows, t)
				kept++
			}
		}
	}
	if err := lake.ReplaceTable(ctx, tx, schemas.Tasks, rows); err != nil {
		return err
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "pool", Params: map[string]any{"source": "simdesk"}})
	if err != nil {
		return err
	}
	splits := map[string]int{}
	for _, t := range rows {
		splits[t.Split]++
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"snapshot": m.ID, "tasks": len(rows), "kept": kept, "splits": splits})
	}
	fmt.Fprintf(c.App.Writer, "%d tasks (%d kept from the lake), splits %v\nsnapshot %s\n", len(rows), kept, splits, m.ID)
	return nil
}

func runSimdeskServe(c *cli.Context) error {
	d, err := simdesk.New(c.Int("width"), c.Int("height"), c.Int64("seed"))
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(c.String("host"), strconv.Itoa(c.Int("port")))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := server.NewHTTPServer(d)
	fmt.Fprintf(c.App.ErrWriter, "simdesk serving OSWorld's desktop API on http://%s\n", ln.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
