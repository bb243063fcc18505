package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The train stage is not built yet; it says so and exits non-zero (code 5).
func init() {
	register(&cli.Command{
		Name:        "train",
		Usage:       "the train stage (not built yet)",
		Description: "Example: cualake train --lake ./data/lake",
		Flags:       []cli.Flag{lakeFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			return fmt.Errorf("the train stage: %w", ErrNotBuilt)
		},
	})
}
