// Command segment runs the segment stage alone, for staged CI jobs: it reads --in and
// commits the next snapshot. Same flags as `cualake segment`.
package main

import "github.com/cualake/cualake/cmd/internal/cli"

func main() { cli.Main(cli.StageApp("segment")) }
