package causal

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sugarme/gotch"

	"github.com/cualake/cualake/trainer/internal/ckpt"
)

// Checkpoints use trainer/internal/ckpt's container with magic
// "cualake-causal\x00", version 1, and a JSON header holding config,
// tokenizer, special ids, the id map's tokenizer ids (compact order) and the
// weights' names and shapes.
const (
	checkpointMagic   = "cualake-causal\x00"
	checkpointVersion = 1
)

// IsCheckpoint reports whether data starts like a causal checkpoint.
func IsCheckpoint(data []byte) bool { return bytes.HasPrefix(data, []byte(checkpointMagic)) }

type header struct {
	Config    Config        `json:"config"`
	Tokenizer string        `json:"tokenizer"`
	Special   Special       `json:"special"`
	IDs       []int32       `json:"ids"`
	Weights   []ckpt.Weight `json:"weights"`
}

// MarshalBinary serialises configuration, tokenizer, id map and weights.
func (m *Model) MarshalBinary() ([]byte, error) {
	w, err := m.Weights()
	if err != nil {
		return nil, fmt.Errorf("save causal checkpoint: %w", err)
	}
	h := header{Config: m.cfg, Tokenizer: m.tokenizer, Special: m.special, IDs: m.ids.Tokens()}
	for _, q := range m.params {
		h.Weights = append(h.Weights, ckpt.Weight{Name: q.name, Shape: q.shape})
	}
	out, err := ckpt.Encode(checkpointMagic, checkpointVersion, h, h.Weights, w)
	if err != nil {
		return nil, fmt.Errorf("save causal checkpoint: %w", err)
	}
	return out, nil
}

// Load restores a model from MarshalBinary's bytes onto dev.
func Load(data []byte, dev gotch.Device) (*Model, error) {
	var h header
	rest, err := ckpt.Decode(data, checkpointMagic, checkpointVersion, &h, errors.New("not a cualake causal checkpoint"))
	if err != nil {
		return nil, fmt.Errorf("load causal checkpoint: %w", err)
	}
	ids, err := NewIDMap(h.IDs)
	if err != nil {
		return nil, fmt.Errorf("load causal checkpoint: %w", err)
	}
	if len(h.IDs) != ids.Size()-1 {
		return nil, errors.New("load causal checkpoint: the id map repeats ids")
	}
	if err := check(h.Config, ids, h.Special); err != nil {
		return nil, fmt.Errorf("load causal checkpoint: %w", err)
	}
	var want []ckpt.Weight
	for _, sp := range h.Config.specs() {
		want = append(want, ckpt.Weight{Name: sp.name, Shape: sp.shape})
	}
	values, err := ckpt.Values(rest, want, h.Weights)
	if err != nil {
		return nil, fmt.Errorf("load causal checkpoint: %w", err)
	}
	m, err := build(h.Config, ids, h.Special, h.Tokenizer, dev, values)
	if err != nil {
		return nil, fmt.Errorf("load causal checkpoint: %w", err)
	}
	return m, nil
}
