package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/infile"
	"github.com/cualake/cualake/query"
)

func init() {
	register(&cli.Command{
		Name:      "query",
		Usage:     "run read-only SQL over a snapshot (every table is a view)",
		ArgsUsage: `"SQL"`,
		Description: `Every table of the snapshot is a view named after it; lake_snapshots holds the lineage.
SQL is read-only and confined to the lake's files.

Example:
   cualake query "select domain, count(*) from tasks group by 1"
   cualake query --at release/2026-11 --format csv --file q.sql
   cualake query --format json --file - < q.sql
   cualake query --format parquet --out steps.parquet "select * from steps"
   cualake query --schema`,
		Flags: []cli.Flag{lakeFlag,
			&cli.StringFlag{Name: "at", Usage: "snapshot id, id prefix or tag (default main)"},
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table, csv, json or parquet"},
			&cli.StringFlag{Name: "out", Usage: "write the result to FILE instead of stdout"},
			&cli.StringFlag{Name: "file", Usage: "read the SQL from FILE (- for standard input)"},
			&cli.BoolFlag{Name: "schema", Usage: "list tables and columns"},
			jsonFlag,
		},
		Action: runQuery,
	})
}

func runQuery(c *cli.Context) error {
	format := c.String("format")
	if c.Bool("json") {
		format = "json"
	}
	if c.Bool("schema") {
		if format == "json" {
			return printJSON(c.App.Writer, tableColumns())
		}
		for _, t := range tableColumns() {
			fmt.Fprintf(c.App.Writer, "%s (v%d): %s\n", t["table"], t["version"], t["doc"])
			for _, col := range t["columns"].([]map[string]any) {
				fmt.Fprintf(c.App.Writer, "    %-18s %s\n", col["name"], col["type"])
			}
		}
		return nil
	}
	stmt := strings.Join(c.Args().Slice(), " ")
	if f := c.String("file"); f != "" {
		var b []byte
		var err error
		if f == "-" {
			// standard input is the user's explicit choice, so a pipe is
			// fine here; the limit still bounds what is held
			b, err = infile.ReadAll(c.App.Reader, "standard input", infile.MaxText)
		} else {
			b, err = infile.Read(f, infile.MaxText)
		}
		if err != nil {
			return fmt.Errorf("--file: %w", err)
		}
		stmt = string(b)
	}
	if strings.TrimSpace(stmt) == "" {
		return usageErr(`query needs "SQL" or --file`)
	}
	if format == "parquet" && c.String("out") == "" {
		return usageErr("--format parquet needs --out FILE")
	}
	e, err := engineAt(c)
	if err != nil {
		return err
	}
	defer e.Close()
	res, err := e.Query(c.Context, stmt)
	if err != nil {
		return err
	}
	if out := c.String("out"); out != "" {
		if err := query.WriteFile(out, format, res, lakeFolders(c)...); err != nil {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "wrote %d rows to %s\n", len(res.Rows), out)
		return nil
	}
	return query.Write(c.App.Writer, format, res)
}
