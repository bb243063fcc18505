// Command cualake is the toolkit's single entry point: lake, query, import,
// export and every stage.
package main

import "github.com/cualake/cualake/cmd/internal/cli"

func main() { cli.Main(cli.App()) }
