package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The audit stage is not built yet; it says so and exits non-zero (code 5).
func init() {
	register(&cli.Command{
		Name:        "audit",
		Usage:       "the audit stage (not built yet)",
		Description: "Example: cualake audit --lake ./data/lake",
		Flags:       []cli.Flag{lakeFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			return fmt.Errorf("the audit stage: %w", ErrNotBuilt)
		},
	})
}
