//go:build notorch

// The torch-free build (bin/cualake): the commands that load a model are
// handed to TorchBinary (torch.go), so nothing here links libtorch.
package cli

import "github.com/urfave/cli/v2"

func init() { handOff = execTorch }

// runTrain is reached only if torchCommands stops routing train.
func runTrain(c *cli.Context) error { return execTorch(c) }
