package cli

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
)

// lakeFolders names the --lake folder when it is a local one, so that
// outputs (--out, --report, --chart) are refused inside it even if its
// marker file is gone; outfile finds other lakes by their marker.
func lakeFolders(c *cli.Context) []string {
	loc := c.String("lake")
	if p, ok := strings.CutPrefix(loc, "file://"); ok {
		loc = p
	}
	if loc == "" || lake.IsURL(loc) {
		return nil
	}
	return []string{loc}
}
