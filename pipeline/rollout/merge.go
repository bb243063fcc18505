package rollout

import (
	"context"

	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/schemas"
)

func init() {
	// A sharded rollout merges as the union of its shards' rows; only the
	// all-errored check needs every shard's episodes at once.
	shard.RegisterStageMerge("rollout", shard.StageMerge{Check: CheckMerge})
}

// CheckMerge refuses to merge the fragments of a sharded rollout whose every
// episode ended in error (ErrAllErrored, naming the first errors in shard
// order), as the unsharded run refuses to commit: no shard can tell, since
// each sees only its own tasks.
func CheckMerge(ctx context.Context, in *shard.MergeInput) error {
	var s Summary
	for _, f := range in.Fragments {
		// Shard by shard: the first episode that played out ends the check.
		rows, err := shard.ReadFragmentRows(ctx, in.Lake, []*shard.Fragment{f}, schemas.Trajectories)
		if err != nil {
			return err
		}
		for _, t := range rows {
			if t.Outcome != schemas.OutcomeError {
				return nil
			}
			s.Add(Episode{Trajectory: t})
		}
	}
	return s.AllErrored()
}
