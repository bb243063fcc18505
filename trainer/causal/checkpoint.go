package causal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sugarme/gotch"
)

// Checkpoint layout (integers little-endian):
//
//	magic   "cualake-causal\x00" (15 bytes)
//	version uint32 (1)
//	hlen    uint32, then hlen bytes of JSON header: config, tokenizer,
//	        special ids, the id map's tokenizer ids (compact order), and the
//	        weights' names and shapes
//	data    the weights as float32, in header order
//
// Nothing time- or machine-dependent is written: equal weights give equal
// bytes, so a checkpoint is a content-addressed blob like any other.
const (
	checkpointMagic   = "cualake-causal\x00"
	checkpointVersion = 1
	maxHeaderBytes    = 64 << 20
)

// IsCheckpoint reports whether data starts like a causal checkpoint.
func IsCheckpoint(data []byte) bool { return bytes.HasPrefix(data, []byte(checkpointMagic)) }

type weightInfo struct {
	Name  string  `json:"name"`
	Shape []int64 `json:"shape"`
}

type header struct {
	Config    Config       `json:"config"`
	Tokenizer string       `json:"tokenizer"`
	Special   Special      `json:"special"`
	IDs       []int32      `json:"ids"`
	Weights   []weightInfo `json:"weights"`
}

// MarshalBinary serialises configuration, tokenizer, id map and weights.
func (m *Model) MarshalBinary() ([]byte, error) {
	w, err := m.Weights()
	if err != nil {
		return nil, fmt.Errorf("save causal checkpoint: %w", err)
	}
	h := header{Config: m.cfg, Tokenizer: m.tokenizer, Special: m.special, IDs: m.ids.Tokens()}
	for _, q := range m.params {
		h.Weights = append(h.Weights, weightInfo{Name: q.name, Shape: q.shape})
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("save causal checkpoint: header: %w", err)
	}
	n := 0
	for _, q := range m.params {
		n += len(w[q.name])
	}
	out := make([]byte, 0, len(checkpointMagic)+8+len(hb)+4*n)
	out = append(out, checkpointMagic...)
	out = binary.LittleEndian.AppendUint32(out, checkpointVersion)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(hb)))
	out = append(out, hb...)
	for _, q := range m.params {
		for _, v := range w[q.name] {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out, nil
}

// Load restores a model from MarshalBinary's bytes onto dev.
func Load(data []byte, dev gotch.Device) (*Model, error) {
	if !IsCheckpoint(data) || len(data) < len(checkpointMagic)+8 {
		return nil, errors.New("load causal checkpoint: not a cualake causal checkpoint")
	}
	rest := data[len(checkpointMagic):]
	if v := binary.LittleEndian.Uint32(rest); v != checkpointVersion {
		return nil, fmt.Errorf("load causal checkpoint: version %d, want %d", v, checkpointVersion)
	}
	hlen := binary.LittleEndian.Uint32(rest[4:])
	rest = rest[8:]
	if hlen > maxHeaderBytes || int(hlen) > len(rest) {
		return nil, fmt.Errorf("load causal checkpoint: header length %d exceeds the data", hlen)
	}
	var h header
	if err := json.Unmarshal(rest[:hlen], &h); err != nil {
		return nil, fmt.Errorf("load causal checkpoint: header: %w", err)
	}
	rest = rest[hlen:]
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
	specs := h.Config.specs()
	if len(specs) != len(h.Weights) {
		return nil, fmt.Errorf("load causal checkpoint: %d weights, the config needs %d", len(h.Weights), len(specs))
	}
	values := make(map[string][]float32, len(specs))
	for i, sp := range specs {
		wi := h.Weights[i]
		if wi.Name != sp.name || !slices.Equal(wi.Shape, sp.shape) {
			return nil, fmt.Errorf("load causal checkpoint: weight %d is %s%v, want %s%v", i, wi.Name, wi.Shape, sp.name, sp.shape)
		}
		n := 1
		for _, d := range sp.shape {
			n *= int(d)
		}
		if len(rest) < 4*n {
			return nil, fmt.Errorf("load causal checkpoint: data ends inside weight %q", sp.name)
		}
		vals := make([]float32, n)
		for j := range vals {
			vals[j] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*j:]))
		}
		values[sp.name] = vals
		rest = rest[4*n:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("load causal checkpoint: %d trailing bytes", len(rest))
	}
	m, err := build(h.Config, ids, h.Special, h.Tokenizer, dev, values)
	if err != nil {
		return nil, fmt.Errorf("load causal checkpoint: %w", err)
	}
	return m, nil
}
