package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The segment stage is not built yet; it says so and exits non-zero (code 5).
func init() {
	register(&cli.Command{
		Name:        "segment",
		Usage:       "the segment stage (not built yet)",
		Description: "Example: cualake segment --lake ./data/lake",
		Flags:       []cli.Flag{lakeFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			return fmt.Errorf("the segment stage: %w", ErrNotBuilt)
		},
	})
}
