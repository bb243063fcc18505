package sample

import (
	"container/heap"
	"math"
	"math/rand/v2"
)

// newRNG returns the PCG source of one selection. The first PCG word is the
// caller's seed; the second mixes the sampler name, the iteration and the
// refill round, so every (seed, sampler, iteration, round) has its own
// stream and re-running a selection reproduces it exactly.
func newRNG(seed uint64, sampler string, iteration, round int32) *rand.Rand {
	h := uint64(14695981039346656037) // FNV-1a offset basis
	for i := 0; i < len(sampler); i++ {
		h ^= uint64(sampler[i])
		h *= 1099511628211
	}
	h ^= uint64(uint32(iteration))<<32 | uint64(uint32(round))
	return rand.New(rand.NewPCG(seed, splitmix(h)))
}

// splitmix is the SplitMix64 finaliser; it spreads nearby stream words apart.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// open01 draws from (0, 1]: log(0) would give an infinite key.
func open01(rng *rand.Rand) float64 { return 1 - rng.Float64() }

// keyed is one reservoir entry: an index and its Efraimidis-Spirakis key in
// log space, log(u)/w.
type keyed struct {
	key float64
	idx int
}

// minKeys is a min-heap on key, ties broken so that the larger index is the
// minimum (evicted first): with indices in task-id order, a tie keeps the
// smaller task id.
type minKeys []keyed

func (h minKeys) Len() int { return len(h) }
func (h minKeys) Less(a, b int) bool {
	if h[a].key != h[b].key {
		return h[a].key < h[b].key
	}
	return h[a].idx > h[b].idx
}
func (h minKeys) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *minKeys) Push(x any)   { *h = append(*h, x.(keyed)) }
func (h *minKeys) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// drainDesc empties the heap and returns its entries by key, largest first
// (ties: smaller index first).
func drainDesc(h *minKeys) []keyed {
	out := make([]keyed, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(keyed)
	}
	return out
}

// weightedSample draws k distinct indices of [0, n) without replacement,
// each successive draw with probability proportional to weight(i) among the
// indices not yet drawn (Efraimidis-Spirakis sampling). It runs the
// exponential-jumps variant A-ExpJ in log space: one pass over the weights,
// O(k log(n/k)) random numbers, a k-sized heap. Indices of zero weight are
// never drawn, so fewer than k come back when fewer have positive weight;
// the caller decides how to fill. The result is ordered by key, largest
// first, which is the order of successive sampling. weight must return
// finite values >= 0.
func weightedSample(rng *rand.Rand, n, k int, weight func(int) float64) []int {
	if k <= 0 || n <= 0 {
		return nil
	}
	h := make(minKeys, 0, k)
	i := 0
	for ; i < n && len(h) < k; i++ {
		if w := weight(i); w > 0 {
			h = append(h, keyed{math.Log(open01(rng)) / w, i})
		}
	}
	heap.Init(&h)
	if len(h) == k {
		for i < n {
			t := h[0].key // log of the smallest key, <= 0
			if t == 0 {
				break // every key is already maximal; nothing can enter
			}
			xw := math.Log(open01(rng)) / t // weight to skip before the next entrant
			acc := 0.0
			for ; i < n; i++ {
				w := weight(i)
				if w <= 0 {
					continue
				}
				acc += w
				if acc >= xw {
					break
				}
			}
			if i >= n {
				break
			}
			w := weight(i)
			// The entrant's key is uniform on (T^w, 1] in linear space.
			tw := math.Exp(t * w)
			u := tw + (1-tw)*open01(rng)
			h[0] = keyed{math.Log(u) / w, i}
			heap.Fix(&h, 0)
			i++
		}
	}
	picked := drainDesc(&h)
	out := make([]int, len(picked))
	for j, p := range picked {
		out[j] = p.idx
	}
	return out
}

// uniformSample draws k distinct indices of [0, n) uniformly (Floyd's
// algorithm: O(k) time and memory whatever n is), in draw order.
func uniformSample(rng *rand.Rand, n, k int) []int {
	if k > n {
		k = n
	}
	if k <= 0 {
		return nil
	}
	seen := make(map[int]struct{}, k)
	out := make([]int, 0, k)
	for j := n - k; j < n; j++ {
		t := rng.IntN(j + 1)
		if _, dup := seen[t]; dup {
			t = j
		}
		seen[t] = struct{}{}
		out = append(out, t)
	}
	return out
}

// roundCount returns round(x) for a count computed from a fraction of the
// batch, tolerating float error so 0.2*5 is 1, not 0.
func roundCount(x float64) int { return int(math.Floor(x + 0.5 + 1e-9)) }

// floorCount returns floor(x) tolerating float error (0.025*40 is 1).
func floorCount(x float64) int { return int(math.Floor(x + 1e-9)) }
