package segment

import (
	"math/bits"
	"sync"
)

// Pool recycles the token arrays of items once they are consumed (written
// to a file, counted by a benchmark). Items are large (tens of thousands of
// tokens) and short-lived, so allocating each fresh costs more than
// building it: the runtime zeroes the memory, and the garbage collector
// runs often and must free it. Arrays are kept by power-of-two capacity.
// A Pool is safe for concurrent use; a nil *Pool allocates.
type Pool struct {
	classes [48]sync.Pool
}

type tokenBufs struct {
	ids  []int32
	mask []int8
	logp []float32
}

// minPoolClass is the smallest capacity class (4,096 tokens).
const minPoolClass = 12

func poolClass(n int) int {
	if n <= 1<<minPoolClass {
		return minPoolClass
	}
	return bits.Len(uint(n - 1))
}

// get returns arrays of length >= n, mask and logp zero.
func (p *Pool) get(n int) ([]int32, []int8, []float32) {
	if p == nil {
		return make([]int32, n), make([]int8, n), make([]float32, n)
	}
	k := poolClass(n)
	if b, ok := p.classes[k].Get().(*tokenBufs); ok {
		clear(b.mask)
		clear(b.logp)
		return b.ids, b.mask, b.logp
	}
	c := 1 << k
	return make([]int32, c), make([]int8, c), make([]float32, c)
}

// put takes back arrays from get (any length of them; their capacity
// decides the class).
func (p *Pool) put(ids []int32, mask []int8, logp []float32) {
	if p == nil {
		return
	}
	c := cap(ids)
	if c < 1<<minPoolClass || c&(c-1) != 0 || cap(mask) != c || cap(logp) != c {
		return // not one of ours
	}
	p.classes[bits.Len(uint(c))-1].Put(&tokenBufs{ids: ids[:c], mask: mask[:c], logp: logp[:c]})
}

// Release returns the items' arrays to the pool; the items must not be
// used afterwards.
func (p *Pool) Release(items []Item) {
	for i := range items {
		p.put(items[i].IDs, items[i].Mask, items[i].Logp)
		items[i].IDs, items[i].Mask, items[i].Logp = nil, nil, nil
	}
}
