package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// StrategyMime is the mime type of a learned strategy blob.
const StrategyMime = "application/vnd.cualake.verify-strategy+json"

// TrainStage is the stage name of commits that learn a strategy; their
// params name the strategy blob under "strategy_blob".
const TrainStage = "verify-train"

// ErrNoTrained means no learned strategy is reachable from a snapshot.
var ErrNoTrained = errors.New("no trained verification strategy")

// StrategyBlob renders a strategy as a content-addressed blob.
func StrategyBlob(s *Strategy) (schemas.Blob, error) {
	b, err := MarshalStrategy(s)
	if err != nil {
		return schemas.Blob{}, err
	}
	return schemas.Blob{Hash: schemas.HashBytes(b), Mime: StrategyMime, Size: int64(len(b)), Bytes: b}, nil
}

// FindTrained returns the newest learned strategy in the history of ref
// (the nearest verify-train commit) and the snapshot that committed it.
func FindTrained(ctx context.Context, l *lake.Lake, ref string) (*Strategy, string, error) {
	log, err := l.Log(ctx, ref, 0)
	if err != nil {
		return nil, "", err
	}
	for _, m := range log {
		if m.Stage != TrainStage {
			continue
		}
		var p struct {
			Blob string `json:"strategy_blob"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil || p.Blob == "" {
			continue
		}
		b, err := lake.Blob(ctx, l, m, p.Blob)
		if err != nil {
			return nil, "", fmt.Errorf("trained strategy of snapshot %s: %w", m.ID, err)
		}
		s, err := UnmarshalStrategy(b.Bytes)
		if err != nil {
			return nil, "", fmt.Errorf("trained strategy of snapshot %s: %w", m.ID, err)
		}
		s.Name = StrategyTrained
		return s, m.ID, nil
	}
	return nil, "", fmt.Errorf("%w in the history of %q (run cualake verify --train first)", ErrNoTrained, ref)
}
