// Package shard splits a stage's work over N independent processes (Slurm
// array tasks, machines) and merges their output into the one snapshot an
// unsharded run would have committed.
//
// A sharded stage processes the keys (task ids, trajectory ids, documents)
// whose stable hash falls in its shard and writes a fragment: its tables'
// rows as sorted, content-addressed files plus a fragment manifest at
//
//	fragments/<stage>/<input snapshot>/<params hash>/shard-<I>-of-<N>.json
//
// without moving any ref. Merge commits the N fragments as one snapshot.
// Both paths write through lake.SortedWriter, whose files depend only on the
// set of rows, so the merged snapshot has the same data files, and hence
// the same id, as an unsharded run of the same stage, input, parameters and
// seed.
package shard

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Spec names one shard of a run: Index in [0, Count). The zero Spec is an
// unsharded run, which commits directly; any other Spec, 0/1 included,
// writes a fragment.
type Spec struct {
	Index, Count int
}

// Parse reads "I/N" (0 <= I < N); "" is the unsharded zero Spec.
func Parse(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Spec{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Spec{}, fmt.Errorf("shard %q: want I/N, e.g. 0/4 (shards are numbered from 0)", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Spec{}, fmt.Errorf("shard %q: want 0 <= I < N", s)
	}
	return Spec{Index: i, Count: n}, nil
}

// Sharded reports whether the run writes a fragment instead of committing.
func (s Spec) Sharded() bool { return s.Count > 0 }

func (s Spec) String() string {
	if !s.Sharded() {
		return "unsharded"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Of returns the shard a key belongs to among n: FNV-1a (64 bit) of the key
// modulo n. It is part of the fragment format: changing it would move keys
// between shards of fragments already written.
func Of(key string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(n))
}

// Owns reports whether this shard processes key; an unsharded run owns
// every key.
func (s Spec) Owns(key string) bool {
	return !s.Sharded() || Of(key, s.Count) == s.Index
}

// Filter keeps the items this shard owns, in their order.
func Filter[T any](s Spec, items []T, key func(*T) string) []T {
	if !s.Sharded() {
		return items
	}
	var out []T
	for i := range items {
		if s.Owns(key(&items[i])) {
			out = append(out, items[i])
		}
	}
	return out
}
