//go:build notorch

// The torch-free build (bin/cualake): the commands that load a model are
// handed to TorchBinary (torch.go), so nothing here links libtorch.
package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/segment"
	"github.com/cualake/cualake/pipeline/tokenizer"
)

func init() { handOff = execTorch }

// runTrain is reached only if torchCommands stops routing train.
func runTrain(c *cli.Context) error { return execTorch(c) }

// checkpointTokenizer is reached only if torchCommands stops routing the
// command that asked for a checkpoint's vocabulary.
func checkpointTokenizer(_ *cli.Context, _ *lake.Lake, _ *lake.Manifest, _ string) (tokenizer.Encoder, segment.TokenizerInfo, error) {
	return nil, segment.TokenizerInfo{}, fmt.Errorf("a checkpoint's vocabulary needs libtorch: run the command with %s", TorchBinary)
}
