// Command cualake is the toolkit's single entry point: lake, query, import,
// export and every stage. Installed under a stage's name (the hard links
// `make build` puts in bin/), it runs that stage alone, as cmd/<stage> does,
// so the build leaves one large binary rather than seven copies.
package main

import (
	"os"
	"path/filepath"

	"github.com/cualake/cualake/cmd/internal/cli"
	urfave "github.com/urfave/cli/v2"
)

// stages are the names under which the binary runs one stage.
var stages = map[string]bool{"synthesize": true, "rollout": true, "segment": true, "sample": true, "train": true, "audit": true}

// appFor picks the app from the name the binary was started as.
func appFor(arg0 string) *urfave.App {
	if name := filepath.Base(arg0); stages[name] {
		return cli.StageApp(name)
	}
	return cli.App()
}

func main() { cli.Main(appFor(os.Args[0])) }
