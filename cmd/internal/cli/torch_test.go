package cli

import (
	"testing"

	"github.com/cualake/cualake/trainer/stage"
)

// TestTrainPolicyDefault: train's flags are spelled without trainer/stage
// (so the torch-free build has them); their default must stay the stage's.
func TestTrainPolicyDefault(t *testing.T) {
	if want := stage.DefaultParams().Policy; defaultPolicy != want {
		t.Errorf("train --policy default %q, trainer/stage.DefaultParams().Policy %q", defaultPolicy, want)
	}
}
