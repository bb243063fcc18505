package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer/causal"
)

// runAverage is --objective average: the checkpoints p.Versions, loaded
// and averaged weight by weight (causal.Average), become the next version,
// a child of the newest checkpoint that stands for its iteration. Nothing
// is trained, so the checkpoint's params hold the versions and nothing of
// an optimiser.
func runAverage(ctx context.Context, l *lake.Lake, m *lake.Manifest, p Params, prev *schemas.Checkpoint) (*Output, error) {
	if prev == nil {
		return nil, errors.New("train --objective average: no checkpoint yet")
	}
	if len(p.Versions) < 2 {
		return nil, fmt.Errorf("train --objective average: --versions names %d checkpoints, want 2 or more", len(p.Versions))
	}
	if vs := slices.Sorted(slices.Values(p.Versions)); len(slices.Compact(vs)) != len(p.Versions) {
		return nil, fmt.Errorf("train --objective average: --versions %v repeats a version", p.Versions)
	}
	var models []*causal.Model
	defer func() {
		for _, mo := range models {
			mo.Close()
		}
	}()
	for _, v := range p.Versions {
		ck, err := LatestCheckpoint(ctx, l, m, v)
		if err == nil && (ck == nil || ck.Version != v) {
			err = fmt.Errorf("checkpoint version %d: does not exist", v)
		}
		if err != nil {
			return nil, fmt.Errorf("train --objective average: snapshot %s (newest checkpoint %d): %w", short(m.ID), prev.Version, err)
		}
		mo, err := LoadCausal(ctx, l, m, ck, p.Device)
		if err != nil {
			return nil, err
		}
		models = append(models, mo)
	}
	soup, err := causal.Average(models)
	if err != nil {
		return nil, fmt.Errorf("train --objective average --versions %v: %w", p.Versions, err)
	}
	defer soup.Close()
	version, parent := nextVersion(prev)
	out, err := finishCausal(soup, &Output{}, version, parent, ObjectiveAverage, p, prev.Iteration)
	if err != nil {
		return nil, err
	}
	out.Checkpoint.Params = AverageParams(p)
	return out, nil
}

// AverageParams is the params JSON of an average checkpoint and its
// commit: what it averaged, none of the optimiser settings it never used.
func AverageParams(p Params) string {
	b, _ := json.Marshal(map[string]any{"objective": ObjectiveAverage, "policy": p.Policy, "versions": p.Versions, "device": p.Device})
	return string(b)
}
