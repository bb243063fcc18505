// Command synthesize runs the synthesize stage alone, for staged CI jobs: it reads --in and
// commits the next snapshot. Same flags as `cualake synthesize`.
package main

import "github.com/cualake/cualake/cmd/internal/cli"

func main() { cli.Main(cli.StageApp("synthesize")) }
