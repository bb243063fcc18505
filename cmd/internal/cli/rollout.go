package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The rollout stage is not built yet; it says so and exits non-zero (code 5).
func init() {
	register(&cli.Command{
		Name:        "rollout",
		Usage:       "the rollout stage (not built yet)",
		Description: "Example: cualake rollout --lake ./data/lake",
		Flags:       []cli.Flag{lakeFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			return fmt.Errorf("the rollout stage: %w", ErrNotBuilt)
		},
	})
}
