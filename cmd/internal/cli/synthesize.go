package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The synthesize stage is not built yet; it says so and exits non-zero (code 5).
func init() {
	register(&cli.Command{
		Name:        "synthesize",
		Usage:       "the synthesize stage (not built yet)",
		Description: "Example: cualake synthesize --lake ./data/lake",
		Flags:       []cli.Flag{lakeFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			return fmt.Errorf("the synthesize stage: %w", ErrNotBuilt)
		},
	})
}
