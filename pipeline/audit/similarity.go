package audit

import (
	"bytes"
	"encoding/json"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// NormalizeInstruction is the normal form two instructions are compared in:
// lower case; letters and digits kept; '.' and ',' kept only between two
// digits (so "1,000" and "3.5" stay one number); every other character
// (punctuation, symbols, quotes, whitespace) becomes a space; runs of
// spaces collapse and the ends are trimmed. Numbers are not rewritten:
// "rename 3 files" and "rename 4 files" are different objectives.
func NormalizeInstruction(s string) string {
	rs := []rune(strings.ToLower(s))
	var b strings.Builder
	space := true
	for i, r := range rs {
		keep := unicode.IsLetter(r) || unicode.IsDigit(r) ||
			(r == '.' || r == ',') && i > 0 && i+1 < len(rs) && unicode.IsDigit(rs[i-1]) && unicode.IsDigit(rs[i+1])
		if keep {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// CanonicalJSON re-encodes JSON with sorted object keys and no
// insignificant whitespace; numbers keep their literal text. Text that is
// not JSON is encoded as a JSON string, so it still compares exactly.
func CanonicalJSON(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "null"
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		v = s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return strconvQuote(s)
	}
	return strings.TrimSpace(buf.String())
}

// strconvQuote is the fallback for values encoding/json refuses (it never
// should for decoded JSON or a string).
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Similarity is the composite near-duplicate measure of two normalised
// instructions: 0.5 x Jaccard of their word sets + 0.5 x cosine of their
// character 3-gram count vectors (over the text padded with one space at
// each end). Two empty instructions have similarity 0.
func Similarity(a, b string) float64 {
	in := newInterner()
	return composite(features(a, in), features(b, in))
}

// feature holds what the composite needs of one normalised instruction.
type feature struct {
	tokens []int32 // distinct word ids, sorted by rarity rank once ranked
	grams  []gram  // 3-gram ids with counts, sorted by id
	norm   float64 // Euclidean norm of the 3-gram counts
}

type gram struct {
	id    int32
	count int32
}

// interner maps words and 3-grams to dense ids shared by both pools.
type interner struct {
	words map[string]int32
	grams map[string]int32
}

func newInterner() *interner {
	return &interner{words: map[string]int32{}, grams: map[string]int32{}}
}

func (in *interner) id(m map[string]int32, s string) int32 {
	if id, ok := m[s]; ok {
		return id
	}
	id := int32(len(m))
	m[s] = id
	return id
}

// features computes the word set and 3-gram vector of normalised text.
func features(norm string, in *interner) feature {
	var f feature
	if norm == "" {
		return f
	}
	seen := map[int32]bool{}
	for _, w := range strings.Fields(norm) {
		id := in.id(in.words, w)
		if !seen[id] {
			seen[id] = true
			f.tokens = append(f.tokens, id)
		}
	}
	sort.Slice(f.tokens, func(i, j int) bool { return f.tokens[i] < f.tokens[j] })
	rs := []rune(" " + norm + " ")
	counts := map[int32]int32{}
	for i := 0; i+3 <= len(rs); i++ {
		counts[in.id(in.grams, string(rs[i:i+3]))]++
	}
	for id, c := range counts {
		f.grams = append(f.grams, gram{id, c})
		f.norm += float64(c) * float64(c)
	}
	f.norm = math.Sqrt(f.norm)
	sort.Slice(f.grams, func(i, j int) bool { return f.grams[i].id < f.grams[j].id })
	return f
}

// jaccard of two sorted id sets.
func jaccard(a, b []int32) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	inter := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

func cosine(a, b feature) float64 {
	if a.norm == 0 || b.norm == 0 {
		return 0
	}
	dot := 0.0
	for i, j := 0, 0; i < len(a.grams) && j < len(b.grams); {
		switch {
		case a.grams[i].id == b.grams[j].id:
			dot += float64(a.grams[i].count) * float64(b.grams[j].count)
			i++
			j++
		case a.grams[i].id < b.grams[j].id:
			i++
		default:
			j++
		}
	}
	return math.Min(1, dot/(a.norm*b.norm))
}

func composite(a, b feature) float64 {
	return 0.5*jaccard(a.tokens, b.tokens) + 0.5*cosine(a, b)
}

// match is one near-duplicate pair: indexes into the two pools.
type match struct {
	train, eval int
	sim         float64
}

// nearDuplicates finds every (train, eval) pair of normalised instructions
// with composite similarity >= threshold, without comparing all pairs.
//
// Because the 3-gram cosine is at most 1, composite >= T implies word
// Jaccard >= 2T - 1 (0.8 at T = 0.9). Jaccard >= t is then found by prefix
// filtering (Bayardo et al., "Scaling up all pairs similarity search"):
// with words ordered rarest first, two sets with Jaccard >= t share a word
// among the first |x| - ceil(t|x|) + 1 words of each. An inverted index over
// the evaluation pool's prefixes yields the candidates; each is verified
// with the exact composite. The result equals the all-pairs result.
func nearDuplicates(train, eval []string, threshold float64) []match {
	in := newInterner()
	tf := make([]feature, len(train))
	ef := make([]feature, len(eval))
	for i, s := range train {
		tf[i] = features(s, in)
	}
	for i, s := range eval {
		ef[i] = features(s, in)
	}
	tj := 2*threshold - 1
	// Rank words by document frequency over both pools (rarest first, ties
	// by id), so prefixes hold the most selective words.
	df := make([]int32, len(in.words))
	for _, fs := range [][]feature{tf, ef} {
		for _, f := range fs {
			for _, w := range f.tokens {
				df[w]++
			}
		}
	}
	order := make([]int32, len(df))
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(a, b int) bool {
		if df[order[a]] != df[order[b]] {
			return df[order[a]] < df[order[b]]
		}
		return order[a] < order[b]
	})
	rank := make([]int32, len(df))
	for r, w := range order {
		rank[w] = int32(r)
	}
	reorder := func(fs []feature) {
		for i := range fs {
			for k, w := range fs[i].tokens {
				fs[i].tokens[k] = rank[w]
			}
			sort.Slice(fs[i].tokens, func(a, b int) bool { return fs[i].tokens[a] < fs[i].tokens[b] })
		}
	}
	reorder(tf)
	reorder(ef)
	prefix := func(n int) int {
		if tj <= 0 {
			return n // no bound on Jaccard: every word is a candidate key
		}
		return n - int(math.Ceil(tj*float64(n)-1e-9)) + 1
	}
	index := map[int32][]int32{}
	for j, f := range ef {
		// An empty instruction has similarity 0 to everything: never indexed.
		if len(f.tokens) == 0 {
			continue
		}
		for _, w := range f.tokens[:min(prefix(len(f.tokens)), len(f.tokens))] {
			index[w] = append(index[w], int32(j))
		}
	}

	workers := runtime.GOMAXPROCS(0)
	out := make([][]match, len(tf))
	var wg sync.WaitGroup
	next := make(chan int, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := make([]int32, len(ef)) // stamp of the last train item that saw each eval item
			for i := range next {
				f := tf[i]
				if len(f.tokens) == 0 {
					continue
				}
				stamp := int32(i + 1)
				n := float64(len(f.tokens))
				for _, w := range f.tokens[:min(prefix(len(f.tokens)), len(f.tokens))] {
					for _, j := range index[w] {
						if seen[j] == stamp {
							continue
						}
						seen[j] = stamp
						m := float64(len(ef[j].tokens))
						if tj > 0 && (m < tj*n-1e-9 || n < tj*m-1e-9) {
							continue // length filter: Jaccard <= min/max
						}
						jac := jaccard(f.tokens, ef[j].tokens)
						if jac < tj-1e-12 {
							continue
						}
						if s := 0.5*jac + 0.5*cosine(f, ef[j]); s >= threshold-1e-12 {
							out[i] = append(out[i], match{train: i, eval: int(j), sim: s})
						}
					}
				}
				sort.Slice(out[i], func(a, b int) bool { return out[i][a].eval < out[i][b].eval })
			}
		}()
	}
	for i := range tf {
		next <- i
	}
	close(next)
	wg.Wait()
	var all []match
	for _, ms := range out {
		all = append(all, ms...)
	}
	return all
}
