package audit

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

func TestNormalizeInstruction(t *testing.T) {
	for in, want := range map[string]string{
		"  Open the Settings page, and enable DARK-mode!  ": "open the settings page and enable dark mode",
		"Sum 1,000 rows of cell B3.5 (\"quoted\")":          "sum 1,000 rows of cell b3.5 quoted",
		"end.  Next, 2. 3":                 "end next 2 3",
		"Rename  report.txt\tto final.txt": "rename report txt to final txt",
		"don't":                            "don t",
		"Ünïcode ÄPFEL":                    "ünïcode äpfel",
		"!!!":                              "",
	} {
		if got := NormalizeInstruction(in); got != want {
			t.Errorf("NormalizeInstruction(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCanonicalJSON(t *testing.T) {
	a := CanonicalJSON(`{ "func": "x", "expected": {"b": 1.0, "a": [1, 2]} }`)
	b := CanonicalJSON(`{"expected":{"a":[1,2],"b":1.0},"func":"x"}`)
	if a != b || a != `{"expected":{"a":[1,2],"b":1.0},"func":"x"}` {
		t.Fatalf("canonical JSON: %s vs %s", a, b)
	}
	if CanonicalJSON(`{"v": 1}`) == CanonicalJSON(`{"v": 1.0}`) {
		t.Fatal("numbers keep their literal text")
	}
	if CanonicalJSON("not json <&>") != `"not json <&>"` || CanonicalJSON("") != "null" {
		t.Fatalf("non-JSON: %s", CanonicalJSON("not json <&>"))
	}
}

func TestSimilarityByHand(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"a b", "a b", 1},
		// words {abc} vs {abd}: Jaccard 0; 3-grams " ab","abc","bc " vs " ab","abd","bd ": cosine 1/3.
		{"abc", "abd", 1.0 / 6},
		// words {a,b} both: Jaccard 1; " a a b " has " a "x2, "a a", "a b", " b " (norm^2 7),
		// " a b " has " a ", "a b", " b " (norm^2 3); dot 2+1+1 = 4: cosine 4/sqrt(21).
		{"a a b", "a b", 0.5 + 0.5*4/math.Sqrt(21)},
		{"", "", 0},
		{"x", "", 0},
	}
	for _, c := range cases {
		if got := Similarity(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Similarity(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// randomPools builds two pools of instructions over a small vocabulary with
// planted near-duplicates (one word changed, added or dropped).
func randomPools(r *rand.Rand, nTrain, nEval, vocab int) ([]string, []string) {
	words := make([]string, vocab)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	sentence := func() []string {
		n := 6 + r.Intn(14)
		s := make([]string, n)
		for i := range s {
			s[i] = words[int(math.Abs(r.NormFloat64())*float64(vocab)/3)%vocab]
		}
		return s
	}
	eval := make([]string, nEval)
	for i := range eval {
		eval[i] = strings.Join(sentence(), " ")
	}
	train := make([]string, nTrain)
	for i := range train {
		if i%10 == 0 {
			s := strings.Fields(eval[r.Intn(nEval)])
			switch r.Intn(3) {
			case 0:
				s[r.Intn(len(s))] = words[r.Intn(vocab)]
			case 1:
				s = append(s, words[r.Intn(vocab)])
			default:
				s = s[1:]
			}
			train[i] = strings.Join(s, " ")
		} else {
			train[i] = strings.Join(sentence(), " ")
		}
	}
	return train, eval
}

// The indexed join must find exactly the pairs an all-pairs comparison finds.
func TestNearDuplicatesMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, threshold := range []float64{0.9, 0.8, 0.95, 0.6} {
		train, eval := randomPools(r, 400, 300, 60)
		got := nearDuplicates(train, eval, threshold)
		in := newInterner()
		tf := make([]feature, len(train))
		ef := make([]feature, len(eval))
		for i, s := range train {
			tf[i] = features(s, in)
		}
		for j, s := range eval {
			ef[j] = features(s, in)
		}
		var want []match
		for i := range tf {
			for j := range ef {
				if s := composite(tf[i], ef[j]); s >= threshold-1e-12 {
					want = append(want, match{i, j, s})
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("threshold %v: indexed join found %d pairs, all pairs %d", threshold, len(got), len(want))
		}
		for k := range want {
			if got[k].train != want[k].train || got[k].eval != want[k].eval || math.Abs(got[k].sim-want[k].sim) > 1e-12 {
				t.Fatalf("threshold %v: pair %d is %+v, want %+v", threshold, k, got[k], want[k])
			}
		}
		if threshold == 0.9 && len(want) < 10 {
			t.Fatalf("the planted near-duplicates were not found: %d pairs", len(want))
		}
	}
}

// 10k x 10k pools must finish quickly (the all-pairs comparison would take
// 10^8 similarity computations).
func TestNearDuplicatesScale(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	r := rand.New(rand.NewSource(11))
	train, eval := randomPools(r, 10000, 10000, 5000)
	start := time.Now()
	got := nearDuplicates(train, eval, DefaultThreshold)
	took := time.Since(start)
	t.Logf("10k x 10k near-duplicate join: %d pairs in %v", len(got), took)
	if len(got) < 500 {
		t.Fatalf("found %d pairs; about 1000 are planted", len(got))
	}
	if took > 30*time.Second {
		t.Fatalf("10k x 10k took %v", took)
	}
}

func BenchmarkNearDuplicates10k(b *testing.B) {
	r := rand.New(rand.NewSource(11))
	train, eval := randomPools(r, 10000, 10000, 5000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		nearDuplicates(train, eval, DefaultThreshold)
	}
}
