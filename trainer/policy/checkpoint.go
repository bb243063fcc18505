package policy

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sugarme/gotch"
)

// Checkpoint layout (all integers little-endian):
//
//	magic   "cualake-policy\x00" (15 bytes)
//	version uint32 (1)
//	hlen    uint32, then hlen bytes of JSON header: config, vocabulary,
//	        and the weights' names and shapes in order
//	data    the weights as float32, in header order
//
// Nothing time- or machine-dependent is written, so equal weights give equal
// bytes, and the checkpoint can be stored as a content-addressed blob.
const (
	checkpointMagic   = "cualake-policy\x00"
	checkpointVersion = 1
	maxHeaderBytes    = 64 << 20
)

type weightInfo struct {
	Name  string  `json:"name"`
	Shape []int64 `json:"shape"`
}

type checkpointHeader struct {
	Config  Config          `json:"config"`
	Vocab   json.RawMessage `json:"vocab"`
	Weights []weightInfo    `json:"weights"`
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
		h.Weights = append(h.Weights, weightInfo{Name: q.name, Shape: q.shape})
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("save checkpoint: header: %w", err)
	}
	n := 0
	for _, q := range p.params {
		n += len(w[q.name])
	}
	out := make([]byte, 0, len(checkpointMagic)+8+len(hb)+4*n)
	out = append(out, checkpointMagic...)
	out = binary.LittleEndian.AppendUint32(out, checkpointVersion)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(hb)))
	out = append(out, hb...)
	for _, q := range p.params {
		for _, v := range w[q.name] {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out, nil
}

// Load restores a policy from MarshalBinary's bytes onto dev.
func Load(data []byte, dev gotch.Device) (*Policy, error) {
	if len(data) < len(checkpointMagic)+8 || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return nil, errors.New("load checkpoint: not a cualake policy checkpoint")
	}
	rest := data[len(checkpointMagic):]
	if v := binary.LittleEndian.Uint32(rest); v != checkpointVersion {
		return nil, fmt.Errorf("load checkpoint: version %d, want %d", v, checkpointVersion)
	}
	hlen := binary.LittleEndian.Uint32(rest[4:])
	rest = rest[8:]
	if hlen > maxHeaderBytes || int(hlen) > len(rest) {
		return nil, fmt.Errorf("load checkpoint: header length %d exceeds data", hlen)
	}
	var h checkpointHeader
	if err := json.Unmarshal(rest[:hlen], &h); err != nil {
		return nil, fmt.Errorf("load checkpoint: header: %w", err)
	}
	rest = rest[hlen:]
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
	specs := h.Config.specs()
	if len(specs) != len(h.Weights) {
		return nil, fmt.Errorf("load checkpoint: %d weights, config needs %d", len(h.Weights), len(specs))
	}
	values := make(map[string][]float32, len(specs))
	for i, sp := range specs {
		wi := h.Weights[i]
		if wi.Name != sp.name || !slices.Equal(wi.Shape, sp.shape) {
			return nil, fmt.Errorf("load checkpoint: weight %d is %s%v, want %s%v", i, wi.Name, wi.Shape, sp.name, sp.shape)
		}
		n := 1
		for _, d := range sp.shape {
			n *= int(d)
		}
		if len(rest) < 4*n {
			return nil, fmt.Errorf("load checkpoint: data ends inside weight %q", sp.name)
		}
		vals := make([]float32, n)
		for j := range vals {
			vals[j] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*j:]))
		}
		values[sp.name] = vals
		rest = rest[4*n:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("load checkpoint: %d trailing bytes", len(rest))
	}
	p, err := build(h.Config, vocab, dev, values)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	return p, nil
}
