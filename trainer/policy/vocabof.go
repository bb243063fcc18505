package policy

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// VocabFromCheckpoint reads just the vocabulary of a checkpoint, without
// building the model, so tools that only tokenize (the segment stage) need
// no weights.
func VocabFromCheckpoint(data []byte) (*Vocab, error) {
	if len(data) < len(checkpointMagic)+8 || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return nil, errors.New("checkpoint vocabulary: not a cualake policy checkpoint")
	}
	rest := data[len(checkpointMagic):]
	hlen := binary.LittleEndian.Uint32(rest[4:])
	rest = rest[8:]
	if hlen > maxHeaderBytes || int(hlen) > len(rest) {
		return nil, fmt.Errorf("checkpoint vocabulary: header of %d bytes is truncated", hlen)
	}
	var h checkpointHeader
	if err := json.Unmarshal(rest[:hlen], &h); err != nil {
		return nil, fmt.Errorf("checkpoint vocabulary: header: %w", err)
	}
	return UnmarshalVocab(h.Vocab)
}
