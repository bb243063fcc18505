package policy

import (
	"errors"
	"fmt"

	"github.com/cualake/cualake/trainer/internal/ckpt"
)

// VocabFromCheckpoint reads just the vocabulary of a checkpoint, without
// building the model, so tools that only tokenize (the segment stage) need
// no weights.
func VocabFromCheckpoint(data []byte) (*Vocab, error) {
	var h checkpointHeader
	if _, err := ckpt.Decode(data, checkpointMagic, checkpointVersion, &h, errors.New("not a cualake policy checkpoint")); err != nil {
		return nil, fmt.Errorf("checkpoint vocabulary: %w", err)
	}
	return UnmarshalVocab(h.Vocab)
}
