package cli

import (
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
)

var hashPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func init() {
	register(&cli.Command{
		Name:  "blob",
		Usage: "read content-addressed blobs (screenshots, logs, checkpoints)",
		Description: `Example:
   cualake query "select observation from steps limit 1"
   cualake blob get 3f2a...e9 > step.png`,
		Subcommands: []*cli.Command{{
			Name: "get", Usage: "write a blob's bytes to stdout", ArgsUsage: "HASH",
			Description: "Example: cualake blob get --at main 3f2a...e9 > step.png",
			Flags:       []cli.Flag{lakeFlag, &cli.StringFlag{Name: "at", Usage: "snapshot id, id prefix or tag (default main)"}},
			Action:      blobGet,
		}},
	})
}

func blobGet(c *cli.Context) error {
	if c.NArg() != 1 || !hashPattern.MatchString(c.Args().First()) {
		return usageErr("blob get needs one HASH (64 lowercase hex digits, the sha256 of the bytes)")
	}
	l, m, err := snapshotAt(c, "at")
	if err != nil {
		return err
	}
	b, err := lake.Blob(c.Context, l, m, c.Args().First())
	if err != nil {
		return err
	}
	_, err = c.App.Writer.Write(b.Bytes)
	return err
}
