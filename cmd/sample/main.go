// Command sample runs the sample stage alone, for staged CI jobs: it reads --in and
// commits the next snapshot. Same flags as `cualake sample`.
package main

import "github.com/cualake/cualake/cmd/internal/cli"

func main() { cli.Main(cli.StageApp("sample")) }
