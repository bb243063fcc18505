package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/notebooks"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query/ui"
	"github.com/cualake/cualake/query/view"
)

func init() {
	register(&cli.Command{
		Name:  "ui",
		Usage: "serve a local, read-only web UI over the lake: refs, snapshot log, tables, SQL, viewer pages, notebooks",
		Description: `Serves, from this binary alone, the lake's refs (branches under refs/heads/ and tags) and snapshot log
with lineage, a table browser (schema and first rows), a SQL box through the same confined engine as
` + "`cualake query`" + ` with results as tables and a chart, the trajectory, group and task pages of ` + "`cualake view`" + `
rendered live, and the shipped notebooks. It never writes to the lake.

It binds to loopback (127.0.0.1:8765) by default and then answers only requests addressed to a loopback
name. Any other address needs --token: every request must then carry it (Authorization: Bearer T,
X-Cualake-Token: T, or ?token=T, which sets a cookie for the links that follow).

Example:
   cualake ui
   cualake ui --lake ./data/lake --addr 127.0.0.1:9000
   cualake ui --addr 0.0.0.0:8765 --token "$(openssl rand -hex 16)"`,
		Flags: []cli.Flag{lakeFlag,
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8765", Usage: "listen address (host:port; port 0 picks a free one)"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"CUALAKE_UI_TOKEN"}, Usage: "token every request must carry (required off loopback)"},
		},
		Action: uiAction,
	})
}

func uiAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("ui takes no arguments, got %q", c.Args().First())
	}
	addr, token := c.String("addr"), c.String("token")
	if !ui.IsLoopback(addr) && token == "" {
		return usageErr("--addr %s is not a loopback address: pass --token T (every request must then carry it), or bind to 127.0.0.1", addr)
	}
	l, err := openLake(c, false)
	if err != nil {
		return err
	}
	srv := ui.New(l, ui.Options{Token: token,
		Tokenizers: func(*lake.Manifest) view.Tokenizers { return segmentTokenizers() },
		Notebooks:  notebooks.Names, NotebookSource: notebooks.Source})
	defer srv.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	u := url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/"}
	if token != "" {
		u.RawQuery = "token=" + url.QueryEscape(token)
	}
	fmt.Fprintf(c.App.Writer, "cualake ui: serving %s read-only at %s (Ctrl-C stops)\n", l, u.String())
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("ui: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("ui: %w", err)
	}
	<-done
	return nil
}
