package policy

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sugarme/gotch"

	"github.com/cualake/cualake/trainer/internal/ckpt"
)

// Checkpoints use trainer/internal/ckpt's container with magic
// "cualake-policy\x00", version 1, and a JSON header holding config,
// vocabulary and the weights' names and shapes in order.
const (
	checkpointMagic   = "cualake-policy\x00"
	checkpointVersion = 1
)

type checkpointHeader struct {
	Config  Config          `json:"config"`
	Vocab   json.RawMessage `json:"vocab"`
	Weights []ckpt.Weight   `json:"weights"`
}

// MarshalBinary serialises configuration, vocabulary and weights.
func (p *Policy) MarshalBinary() ([]byte, error) {
	vocab, err := p.vocab.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("save checkpoint: %w", err)
	}
	w, err := p.Weights()
	if err != nil {
		return nil, fmt.Errorf("save checkpoint: %w", err)
	}
	h := checkpointHeader{Config: p.cfg, Vocab: vocab}
	for _, q := range p.params {
		h.Weights = append(h.Weights, ckpt.Weight{Name: q.name, Shape: q.shape})
	}
	out, err := ckpt.Encode(checkpointMagic, checkpointVersion, h, h.Weights, w)
	if err != nil {
		return nil, fmt.Errorf("save checkpoint: %w", err)
	}
	return out, nil
}

// Load restores a policy from MarshalBinary's bytes onto dev.
func Load(data []byte, dev gotch.Device) (*Policy, error) {
	var h checkpointHeader
	rest, err := ckpt.Decode(data, checkpointMagic, checkpointVersion, &h, errors.New("not a cualake policy checkpoint"))
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	vocab, err := UnmarshalVocab(h.Vocab)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	if h.Config.VocabSize != vocab.VocabSize() {
		return nil, fmt.Errorf("load checkpoint: config vocab_size %d != vocabulary size %d", h.Config.VocabSize, vocab.VocabSize())
	}
	if err := h.Config.Validate(); err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	var want []ckpt.Weight
	for _, sp := range h.Config.specs() {
		want = append(want, ckpt.Weight{Name: sp.name, Shape: sp.shape})
	}
	values, err := ckpt.Values(rest, want, h.Weights)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	p, err := build(h.Config, vocab, dev, values)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	return p, nil
}
