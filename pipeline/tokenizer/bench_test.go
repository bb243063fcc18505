package tokenizer

import (
	"strings"
	"testing"
)

// benchCorpus is the fixture's texts plus a 1 MiB document of the typical
// ones (those under 500 bytes: the fixture's long strings are deliberately
// pathological), with its total size in bytes and tokens.
func benchCorpus(b *testing.B, tok *Tokenizer) (texts []string, nBytes, nTokens int) {
	b.Helper()
	var typical []string
	for _, c := range readFixture(b) {
		texts = append(texts, c.Text)
		if len(c.Text) < 500 {
			typical = append(typical, c.Text)
		}
	}
	var doc strings.Builder
	for i := 0; doc.Len() < 1<<20; i++ {
		doc.WriteString(typical[i*7919%len(typical)])
		doc.WriteString(" The agent clicks the button, waits for the page to load, and then types the query.\n")
	}
	texts = append(texts, doc.String())
	for _, s := range texts {
		nBytes += len(s)
		nTokens += len(tok.Encode(s))
	}
	return texts, nBytes, nTokens
}

func reportTokens(b *testing.B, nTokens int) {
	b.ReportMetric(float64(nTokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkEncode measures steady-state encoding (word cache warm).
func BenchmarkEncode(b *testing.B) {
	tok := defaultTok(b)
	texts, nBytes, nTokens := benchCorpus(b, tok)
	b.SetBytes(int64(nBytes))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, s := range texts {
			tok.Encode(s)
		}
	}
	reportTokens(b, nTokens)
}

// BenchmarkEncodeCold empties the word cache before every pass, so every
// word goes through BPE once.
func BenchmarkEncodeCold(b *testing.B) {
	tok := defaultTok(b)
	texts, nBytes, nTokens := benchCorpus(b, tok)
	b.SetBytes(int64(nBytes))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for k := range tok.cache.shards {
			clear(tok.cache.shards[k].m)
		}
		b.StartTimer()
		for _, s := range texts {
			tok.Encode(s)
		}
	}
	reportTokens(b, nTokens)
}

// BenchmarkEncodeParallel encodes from all Ps at once, sharing the cache.
func BenchmarkEncodeParallel(b *testing.B) {
	tok := defaultTok(b)
	texts, nBytes, nTokens := benchCorpus(b, tok)
	b.SetBytes(int64(nBytes))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for _, s := range texts {
				tok.Encode(s)
			}
		}
	})
	reportTokens(b, nTokens)
}

func BenchmarkDecode(b *testing.B) {
	tok := defaultTok(b)
	texts, _, nTokens := benchCorpus(b, tok)
	seqs := make([][]int32, len(texts))
	for i, s := range texts {
		seqs[i] = tok.Encode(s)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, ids := range seqs {
			tok.Decode(ids)
		}
	}
	reportTokens(b, nTokens)
}

func BenchmarkLoad(b *testing.B) {
	path, err := DefaultPath()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}
