package cli

import (
	"testing"

	"github.com/cualake/cualake/trainer/stage"
)

// TestTrainPolicyDefault: train's flags are spelled without trainer/stage
// (so the torch-free build has them); their default must stay the stage's.
func TestTrainPolicyDefault(t *testing.T) {
	if policyEncDec != stage.PolicyEncDec {
		t.Errorf("train --policy default %q, trainer/stage.PolicyEncDec %q", policyEncDec, stage.PolicyEncDec)
	}
}
