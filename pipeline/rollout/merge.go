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
	rows, err := shard.ReadFragmentRows(ctx, in.Lake, in.Fragments, schemas.Trajectories)
	if err != nil {
		return err
	}
	var s Summary
	for _, t := range rows {
		s.Add(Episode{Trajectory: t})
	}
	return s.AllErrored()
}
