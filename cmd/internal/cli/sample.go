package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The sample stage is not built yet; it says so and exits non-zero (code 5).
func init() {
	register(&cli.Command{
		Name:        "sample",
		Usage:       "the sample stage (not built yet)",
		Description: "Example: cualake sample --lake ./data/lake",
		Flags:       []cli.Flag{lakeFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			return fmt.Errorf("the sample stage: %w", ErrNotBuilt)
		},
	})
}
