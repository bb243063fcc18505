package causal

import (
	"errors"
	"fmt"
	"slices"
)

// Unk is the compact id every tokenizer id outside the map reads as.
const Unk = 0

// IDMap maps the tokenizer's ids (Qwen3's 151,669) onto the model's compact
// vocabulary: compact id i+1 is Tokens[i]; every other id reads as Unk,
// whose embedding is trained like any other (it stands for "a token the
// warm start never showed"). The model never writes Unk (nor the template
// tokens other than <|im_end|>): their output scores are fixed at -1e9, so
// sampled responses hold only mapped ids, and a trainable token outside the
// map is an error (the item cannot be scored).
// An IDMap is read-only once made.
type IDMap struct {
	tokens []int32 // ascending tokenizer ids; compact id = index + 1
	index  map[int32]int32
}

// NewIDMap makes a map over the given tokenizer ids (any order, repeats
// allowed); ids must be non-negative.
func NewIDMap(ids []int32) (*IDMap, error) {
	toks := slices.Clone(ids)
	slices.Sort(toks)
	toks = slices.Compact(toks)
	if len(toks) == 0 {
		return nil, errors.New("id map: no ids")
	}
	if toks[0] < 0 {
		return nil, fmt.Errorf("id map: negative token id %d", toks[0])
	}
	m := &IDMap{tokens: toks, index: make(map[int32]int32, len(toks))}
	for i, t := range toks {
		m.index[t] = int32(i + 1)
	}
	return m, nil
}

// Size is the number of compact ids, Unk included.
func (m *IDMap) Size() int { return len(m.tokens) + 1 }

// Tokens returns the mapped tokenizer ids in compact order.
func (m *IDMap) Tokens() []int32 { return slices.Clone(m.tokens) }

// Compact returns the compact id of a tokenizer id (Unk when unmapped).
func (m *IDMap) Compact(id int32) int32 {
	if c, ok := m.index[id]; ok {
		return c
	}
	return Unk
}

// Known reports whether a tokenizer id has its own compact id.
func (m *IDMap) Known(id int32) bool {
	_, ok := m.index[id]
	return ok
}

// Token returns the tokenizer id of a compact id (false for Unk and ids
// out of range).
func (m *IDMap) Token(c int32) (int32, bool) {
	if c < 1 || int(c) > len(m.tokens) {
		return 0, false
	}
	return m.tokens[c-1], true
}
