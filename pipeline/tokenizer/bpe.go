package tokenizer

import (
	"math"
	"strings"
	"sync"
)

const (
	// smallWord is the longest word merged with the simple quadratic loop
	// on stack arrays; longer words use the heap-based merge.
	smallWord = 64
	// maxCachedWord bounds the words kept in the cache (as the reference
	// does): long ones rarely repeat.
	maxCachedWord = 256
	cacheShards   = 64
	// cacheShardCap bounds each shard; a full shard is simply emptied.
	cacheShardCap = 4096
)

// bpeWord appends the ids of one pre-token (raw UTF-8 bytes, not yet in
// byte-level form) to ids.
func (t *Tokenizer) bpeWord(w string, ids []int32) []int32 {
	switch {
	case len(w) == 0:
		return ids
	case len(w) == 1:
		return append(ids, t.byteID[w[0]])
	case len(w) == 2 && !t.ignoreMerges:
		// One pair lookup is cheaper than the cache.
		if _, id := t.pair(t.byteID[w[0]], t.byteID[w[1]]); id >= 0 {
			return append(ids, id)
		}
		return append(ids, t.byteID[w[0]], t.byteID[w[1]])
	}
	if t.ignoreMerges {
		if id, ok := t.rawVocab[w]; ok {
			return append(ids, id)
		}
	}
	cacheable := len(w) <= maxCachedWord
	if cacheable {
		if cached, ok := t.cache.get(w); ok {
			return append(ids, cached...)
		}
	}
	n0 := len(ids)
	if len(w) <= smallWord {
		ids = t.mergeSmall(w, ids)
	} else {
		ids = t.mergeLarge(w, ids)
	}
	if cacheable {
		t.cache.put(w, ids[n0:])
	}
	return ids
}

// pair returns the rank and result of merging a then b; rank is MaxInt32 if
// they do not merge.
func (t *Tokenizer) pair(a, b int32) (int32, int32) {
	if m, ok := t.merges[pairKey(a, b)]; ok {
		return m.rank, m.id
	}
	return math.MaxInt32, -1
}

// mergeSmall runs BPE on a short word: repeatedly merge the adjacent pair
// with the lowest rank, leftmost on ties, which is the order the
// reference's priority queue (rank plus a positional tie-breaker) yields.
func (t *Tokenizer) mergeSmall(w string, ids []int32) []int32 {
	var symBuf, rankBuf, midBuf [smallWord]int32
	n := len(w)
	syms := symBuf[:n]
	ranks := rankBuf[:n-1] // ranks[k]: merge of syms[k], syms[k+1]
	mids := midBuf[:n-1]
	for k := 0; k < n; k++ {
		syms[k] = t.byteID[w[k]]
	}
	for k := 0; k < n-1; k++ {
		ranks[k], mids[k] = t.pair(syms[k], syms[k+1])
	}
	for n > 1 {
		best, bestRank := -1, int32(math.MaxInt32)
		for k, r := range ranks[:n-1] {
			if r < bestRank {
				best, bestRank = k, r
			}
		}
		if best < 0 {
			break
		}
		syms[best] = mids[best]
		copy(syms[best+1:n-1], syms[best+2:n])
		if best <= n-3 {
			copy(ranks[best+1:n-2], ranks[best+2:n-1])
			copy(mids[best+1:n-2], mids[best+2:n-1])
		}
		n--
		if best > 0 {
			ranks[best-1], mids[best-1] = t.pair(syms[best-1], syms[best])
		}
		if best < n-1 {
			ranks[best], mids[best] = t.pair(syms[best], syms[best+1])
		}
	}
	return append(ids, syms[:n]...)
}

// heapEntry is a candidate merge of the symbol at pos with its successor,
// valid while those two symbols are still left, right.
type heapEntry struct {
	rank, pos   int32
	left, right int32
	id          int32
}

func (e heapEntry) less(o heapEntry) bool {
	return e.rank < o.rank || (e.rank == o.rank && e.pos < o.pos)
}

// mergeLarge is the same algorithm in O(n log n) for long words: a linked
// list of symbols and a heap of candidate merges, stale entries skipped.
func (t *Tokenizer) mergeLarge(w string, ids []int32) []int32 {
	n := len(w)
	syms := make([]int32, n) // -1 once merged into the left neighbour
	next := make([]int32, n)
	prev := make([]int32, n)
	for k := 0; k < n; k++ {
		syms[k] = t.byteID[w[k]]
		next[k] = int32(k + 1)
		prev[k] = int32(k - 1)
	}
	next[n-1] = -1
	h := make([]heapEntry, 0, n)
	push := func(p int32) {
		q := next[p]
		if r, id := t.pair(syms[p], syms[q]); id >= 0 {
			h = heapPush(h, heapEntry{rank: r, pos: p, left: syms[p], right: syms[q], id: id})
		}
	}
	for k := int32(0); k < int32(n-1); k++ {
		push(k)
	}
	for len(h) > 0 {
		var e heapEntry
		e, h = heapPop(h)
		p := e.pos
		q := next[p]
		if syms[p] != e.left || q < 0 || syms[q] != e.right {
			continue // stale: one side has merged since
		}
		syms[p], syms[q] = e.id, -1
		nq := next[q]
		next[p] = nq
		if nq >= 0 {
			prev[nq] = p
		}
		if pp := prev[p]; pp >= 0 {
			push(pp)
		}
		if nq >= 0 {
			push(p)
		}
	}
	for k := int32(0); k >= 0; k = next[k] {
		ids = append(ids, syms[k])
	}
	return ids
}

func heapPush(h []heapEntry, e heapEntry) []heapEntry {
	h = append(h, e)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop(h []heapEntry) (heapEntry, []heapEntry) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[m]) {
			m = l
		}
		if r < len(h) && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top, h
}

// wordCache maps pre-token words to their ids. Sharded maps under RWMutexes:
// lookups of a string key allocate nothing, and goroutines encoding in
// parallel rarely meet on the same lock.
type wordCache struct {
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
	_  [40]byte // keep shards on separate cache lines
}

func (c *wordCache) init() {
	for i := range c.shards {
		c.shards[i].m = make(map[string][]int32)
	}
}

// shard picks a shard from the word's length and end bytes: much cheaper
// than a full hash (the map hashes the key anyway) and spread enough to keep
// lock contention low. w is not empty.
func (c *wordCache) shard(w string) *cacheShard {
	h := uint(len(w))*17 + uint(w[len(w)-1])*31 + uint(w[0])
	return &c.shards[h%cacheShards]
}

func (c *wordCache) get(w string) ([]int32, bool) {
	s := c.shard(w)
	s.mu.RLock()
	v, ok := s.m[w]
	s.mu.RUnlock()
	return v, ok
}

// put stores copies of w and ids: w usually points into a caller's text,
// which the cache must not keep alive.
func (c *wordCache) put(w string, ids []int32) {
	s := c.shard(w)
	v := append([]int32(nil), ids...)
	k := strings.Clone(w)
	s.mu.Lock()
	if len(s.m) >= cacheShardCap {
		clear(s.m)
	}
	s.m[k] = v
	s.mu.Unlock()
}
