// Package ckpt is the byte container both policies' checkpoints use
// (integers little-endian):
//
//	magic   a package's own marker
//	version uint32
//	hlen    uint32, then hlen bytes of the package's JSON header, which
//	        lists the weights' names and shapes
//	data    the weights as float32, in header order
//
// Nothing time- or machine-dependent is written: equal weights give equal
// bytes, so a checkpoint is a content-addressed blob like any other.
package ckpt

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// maxHeaderBytes bounds the JSON header a checkpoint may declare.
const maxHeaderBytes = 64 << 20

// Weight names one weight and its shape in a header.
type Weight struct {
	Name  string  `json:"name"`
	Shape []int64 `json:"shape"`
}

// Size is the number of values of a weight of this shape.
func Size(shape []int64) int {
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	return n
}

// Encode writes magic, version and header (as JSON), then the values of
// weights, in that order.
func Encode(magic string, version uint32, header any, weights []Weight, values map[string][]float32) ([]byte, error) {
	hb, err := json.Marshal(header)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	n := 0
	for _, w := range weights {
		n += len(values[w.Name])
	}
	out := make([]byte, 0, len(magic)+8+len(hb)+4*n)
	out = append(out, magic...)
	out = binary.LittleEndian.AppendUint32(out, version)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(hb)))
	out = append(out, hb...)
	for _, w := range weights {
		for _, v := range values[w.Name] {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out, nil
}

// Decode checks magic and version, unmarshals the JSON header into header
// and returns the weight data after it. notOurs is the error for data
// without the magic.
func Decode(data []byte, magic string, version uint32, header any, notOurs error) ([]byte, error) {
	if len(data) < len(magic)+8 || string(data[:len(magic)]) != magic {
		return nil, notOurs
	}
	rest := data[len(magic):]
	if v := binary.LittleEndian.Uint32(rest); v != version {
		return nil, fmt.Errorf("version %d, want %d", v, version)
	}
	hlen := binary.LittleEndian.Uint32(rest[4:])
	rest = rest[8:]
	if hlen > maxHeaderBytes || int(hlen) > len(rest) {
		return nil, fmt.Errorf("header length %d exceeds the data", hlen)
	}
	if err := json.Unmarshal(rest[:hlen], header); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	return rest[hlen:], nil
}

// Values reads the weights want (the configuration's, in order) from data,
// checking got, the header's list, against them; every byte must be used.
func Values(data []byte, want, got []Weight) (map[string][]float32, error) {
	if len(want) != len(got) {
		return nil, fmt.Errorf("%d weights, the config needs %d", len(got), len(want))
	}
	values := make(map[string][]float32, len(want))
	for i, w := range want {
		if got[i].Name != w.Name || !slices.Equal(got[i].Shape, w.Shape) {
			return nil, fmt.Errorf("weight %d is %s%v, want %s%v", i, got[i].Name, got[i].Shape, w.Name, w.Shape)
		}
		n := Size(w.Shape)
		if len(data) < 4*n {
			return nil, fmt.Errorf("data ends inside weight %q", w.Name)
		}
		vals := make([]float32, n)
		for j := range vals {
			vals[j] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*j:]))
		}
		values[w.Name] = vals
		data = data[4*n:]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(data))
	}
	return values, nil
}
