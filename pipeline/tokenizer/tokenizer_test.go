package tokenizer

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestQwenBasics(t *testing.T) {
	tok := defaultTok(t)
	if got := tok.VocabSize(); got != 151669 {
		t.Errorf("VocabSize() = %d, want 151669", got)
	}
	for _, tc := range []struct {
		tok string
		id  int32
	}{
		{"<|endoftext|>", 151643}, {"<|im_start|>", 151644}, {"<|im_end|>", 151645},
		{"<|vision_start|>", 151652}, {"<|vision_end|>", 151653}, {"<|image_pad|>", 151655},
		{"<think>", 151667}, {"</think>", 151668}, {"Ċ", 198}, {"Ġ", 220}, {"!", 0},
	} {
		id, ok := tok.TokenID(tc.tok)
		if !ok || id != tc.id {
			t.Errorf("TokenID(%q) = %d, %v; want %d", tc.tok, id, ok, tc.id)
		}
		if s, ok := tok.Token(tc.id); !ok || s != tc.tok {
			t.Errorf("Token(%d) = %q, %v; want %q", tc.id, s, ok, tc.tok)
		}
	}
	if _, ok := tok.TokenID("no such token"); ok {
		t.Error("TokenID of an unknown token reported ok")
	}
	for _, id := range []int32{-1, 151669, 1 << 30} {
		if _, ok := tok.Token(id); ok {
			t.Errorf("Token(%d) reported ok", id)
		}
	}
	for _, tc := range []struct {
		text string
		want []int32
	}{
		{"", []int32{}},
		{"\n", []int32{198}},
		{"Hello, world!", []int32{9707, 11, 1879, 0}},
		{"<|im_start|>user\nhi<|im_end|>\n", []int32{151644, 872, 198, 6023, 151645, 198}},
		{"<|vision_start|><|image_pad|><|image_pad|><|vision_end|>", []int32{151652, 151655, 151655, 151653}},
	} {
		if got := tok.Encode(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %s, want %s", tc.text, describe(tok, got), describe(tok, tc.want))
		}
	}
}

func TestRoundTrip(t *testing.T) {
	tok := defaultTok(t)
	beyond := 0
	for _, c := range readFixture(t) {
		want := norm.NFC.String(c.Text)
		if strings.Count(want, "\u034f") != strings.Count(c.Text, "\u034f") {
			// x/text broke the text up (stream-safe limit): it is no oracle
			// here; the fixture test covers these strings.
			beyond++
			continue
		}
		if got := tok.Decode(tok.Encode(c.Text)); got != want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", c.Text, got, want)
		}
	}
	if beyond > 5 {
		t.Errorf("%d corpus strings beyond x/text's stream-safe limit; expected a handful", beyond)
	}
}

func TestDecode(t *testing.T) {
	tok := defaultTok(t)
	ids := tok.Encode("中") // one character, several bytes
	if len(ids) != 1 {
		t.Fatalf("Encode(中) = %v, want one token", ids)
	}
	ja := tok.Encode("語")
	byteTok := func(b byte) int32 { return tok.byteID[b] }
	for _, tc := range []struct {
		name string
		ids  []int32
		want string
	}{
		{"empty", nil, ""},
		{"whole char", ids, "中"},
		{"unknown ids skipped", []int32{-5, ids[0], 1 << 30}, "中"},
		{"truncated 3-byte char is one U+FFFD", []int32{byteTok(0xe4), byteTok(0xb8)}, "\uFFFD"},
		{"lone continuation bytes", []int32{byteTok(0x80), byteTok(0x80)}, "\uFFFD\uFFFD"},
		{"surrogate encoding", []int32{byteTok(0xed), byteTok(0xa0), byteTok(0x80)}, "\uFFFD\uFFFD\uFFFD"},
		{"partial bytes end at an added token", []int32{byteTok(0xe4), 151644, ja[0]}, "\uFFFD<|im_start|>語"},
		{"bytes across tokens join", []int32{byteTok(0xe4), byteTok(0xb8), byteTok(0xad)}, "中"},
	} {
		if got := tok.Decode(tc.ids); got != tc.want {
			t.Errorf("%s: Decode(%v) = %q, want %q", tc.name, tc.ids, got, tc.want)
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	tok := defaultTok(t)
	for _, tc := range []struct{ in, same string }{
		{"\xff", "\uFFFD"},
		{"a\xe4\xb8b", "a\uFFFDb"},
		{"\xe4\xb8\xe4\xb8\xad", "\uFFFD中"},
		{"x\xed\xa0\x80y", "x\uFFFD\uFFFD\uFFFDy"},
		{"<|im_end|>\xc3", "<|im_end|>\uFFFD"},
	} {
		if got, want := tok.Encode(tc.in), tok.Encode(tc.same); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want Encode(%q) = %v", tc.in, got, tc.same, want)
		}
		ids, spans := tok.EncodeOffsets(tc.in)
		if len(spans) != len(ids) || len(spans) == 0 || spans[len(spans)-1].End != len(tc.in) {
			t.Errorf("EncodeOffsets(%q) spans %v do not reach the end", tc.in, spans)
		}
	}
}

func TestEncodeOffsets(t *testing.T) {
	tok := defaultTok(t)
	for _, c := range readFixture(t) {
		ids, spans := tok.EncodeOffsets(c.Text)
		if !slices.Equal(ids, c.IDs) {
			t.Fatalf("EncodeOffsets(%q) ids %v, want %v", c.Text, ids, c.IDs)
		}
		if len(spans) != len(ids) {
			t.Fatalf("EncodeOffsets(%q): %d spans for %d ids", c.Text, len(spans), len(ids))
		}
		// Exact when normalisation changes nothing; otherwise tokens inside
		// a changed stretch share it, so spans may overlap but stay ordered.
		exact := c.Text == norm.NFC.String(c.Text)
		prev, prevStart := 0, 0
		for i, sp := range spans {
			if sp.Start < prevStart || sp.End < prev || sp.End < sp.Start || sp.End > len(c.Text) || (exact && sp.Start < prev) {
				t.Fatalf("EncodeOffsets(%q): span %d %+v out of order (previous %d..%d)", c.Text, i, sp, prevStart, prev)
			}
			prevStart = sp.Start
			if exact && c.Text[sp.Start:sp.End] != string(tok.tokenBytes(ids[i])) {
				t.Fatalf("EncodeOffsets(%q): span %d %+v is %q, token %d is %q", c.Text, i, sp, c.Text[sp.Start:sp.End], ids[i], tok.tokenBytes(ids[i]))
			}
			if exact && sp.Start != prev {
				t.Fatalf("EncodeOffsets(%q): gap before span %d %+v", c.Text, i, sp)
			}
			prev = max(prev, sp.End)
		}
		if prev != len(c.Text) {
			t.Fatalf("EncodeOffsets(%q): spans end at %d, text is %d bytes", c.Text, prev, len(c.Text))
		}
	}
	// A decomposed accent is one stretch of the source.
	s := "ae\u0301z"
	ids, spans := tok.EncodeOffsets(s)
	if got := tok.Decode(ids); got != "aéz" {
		t.Fatalf("Decode(EncodeOffsets(%q)) = %q", s, got)
	}
	if spans[0].Start != 0 || spans[len(spans)-1].End != len(s) {
		t.Errorf("EncodeOffsets(%q) spans %v do not cover the text", s, spans)
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := defaultTok(t)
	cases := readFixture(t)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < len(cases); i += 3 {
				if got := tok.Encode(cases[i].Text); !slices.Equal(got, cases[i].IDs) {
					errs <- cases[i].Text
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode(%q) differs from the reference", s)
	}
}

func TestMergeLargeEqualsSmall(t *testing.T) {
	tok := defaultTok(t)
	var words []string
	for _, c := range readFixture(t) {
		s := normalize(c.Text, true, false).s
		for i := 0; i < len(s); {
			j := scanPretoken(s, i)
			if j-i > 1 && j-i <= smallWord {
				words = append(words, s[i:j])
			}
			i = j
		}
	}
	if len(words) < 1000 {
		t.Fatalf("only %d words", len(words))
	}
	for _, w := range words {
		small := tok.mergeSmall(w, nil)
		large := tok.mergeLarge(w, nil)
		if !slices.Equal(small, large) {
			t.Fatalf("word %q: mergeSmall %v, mergeLarge %v", w, small, large)
		}
	}
}

func TestCacheBounded(t *testing.T) {
	var c wordCache
	c.init()
	for i := 0; i < cacheShards*cacheShardCap*2; i++ {
		c.put(string(rune(0x4e00+i%20000))+strings.Repeat("x", i%7)+string(rune('a'+i%26)), []int32{int32(i)})
	}
	n := 0
	for i := range c.shards {
		n += len(c.shards[i].m)
	}
	if n > cacheShards*cacheShardCap {
		t.Errorf("cache holds %d entries, bound is %d", n, cacheShards*cacheShardCap)
	}
}

// writeJSON writes v as a tokenizer.json in a temp dir.
func writeJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyTokenizer is a small but complete byte-level BPE file: the 256 byte
// tokens (id = byte), a few merges, and two added tokens that strip spaces.
func tinyTokenizer(pre any, extraAdded ...map[string]any) map[string]any {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	merges := [][2]string{{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"Ġw", "o"}, {"1", "2"}}
	for i, m := range merges {
		vocab[m[0]+m[1]] = 256 + i
	}
	added := []map[string]any{
		{"id": 300, "content": "<sep>", "rstrip": true, "special": true},
		{"id": 301, "content": "[MASK]", "lstrip": true, "special": true},
		{"id": 302, "content": "<sep2>", "special": false},
	}
	added = append(added, extraAdded...)
	return map[string]any{
		"added_tokens":  added,
		"normalizer":    nil,
		"pre_tokenizer": pre,
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
}

func TestGeneralPath(t *testing.T) {
	gpt2 := map[string]any{"type": "ByteLevel", "add_prefix_space": false}
	digits := map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\p{N}`}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "use_regex": false},
	}}
	removed := map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"String": " "}, "behavior": "Removed", "invert": false},
		map[string]any{"type": "ByteLevel", "use_regex": false},
	}}
	for _, tc := range []struct {
		name string
		pre  any
		text string
		want []int32
	}{
		{"gpt2 regex", gpt2, "hello world", []int32{259, 261, 'r', 'l', 'd'}},
		{"gpt2 contraction", gpt2, "he's", []int32{256, '\'', 's'}},
		{"rstrip eats following spaces", gpt2, "hello <sep>   world", []int32{259, ' ', 300, 'w', 'o', 'r', 'l', 'd'}},
		{"lstrip eats preceding spaces", gpt2, "hello   [MASK] 12", []int32{259, 301, ' ', 262}},
		{"plain added token keeps spaces", gpt2, "a <sep2> b", []int32{'a', ' ', 302, ' ', 'b'}},
		{"isolated digits", digits, "x12y", []int32{'x', '1', '2', 'y'}},
		{"string pattern removed", removed, "hello  world", []int32{259, 'w', 'o', 'r', 'l', 'd'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := Load(writeJSON(t, tinyTokenizer(tc.pre)))
			if err != nil {
				t.Fatal(err)
			}
			if tok.fastPre {
				t.Fatal("a non-Qwen pre-tokenizer took the fast path")
			}
			got := tok.Encode(tc.text)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
			}
			if tok.VocabSize() != 303 {
				t.Errorf("VocabSize() = %d, want 303", tok.VocabSize())
			}
		})
	}

	// Merges in the old "a b" string form load the same.
	old := tinyTokenizer(gpt2)
	var strMerges []string
	for _, m := range old["model"].(map[string]any)["merges"].([][2]string) {
		strMerges = append(strMerges, m[0]+" "+m[1])
	}
	old["model"].(map[string]any)["merges"] = strMerges
	if tok, err := Load(writeJSON(t, old)); err != nil {
		t.Errorf("string merges: %v", err)
	} else if got, want := tok.Encode("hello world"), []int32{259, 261, 'r', 'l', 'd'}; !slices.Equal(got, want) {
		t.Errorf("string merges: Encode = %v, want %v", got, want)
	}

	// ignore_merges: a word in the vocab is taken whole.
	f := tinyTokenizer(gpt2)
	f["model"].(map[string]any)["ignore_merges"] = true
	f["model"].(map[string]any)["vocab"].(map[string]int)["wor"] = 290
	tok, err := Load(writeJSON(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Encode("wor hello"), []int32{290, ' ', 259}; !slices.Equal(got, want) {
		t.Errorf("ignore_merges: Encode = %v, want %v", got, want)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(garbage, []byte("this is { not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")
	gpt2 := map[string]any{"type": "ByteLevel"}

	wordPiece := tinyTokenizer(gpt2)
	wordPiece["model"].(map[string]any)["type"] = "WordPiece"
	nfkc := tinyTokenizer(gpt2)
	nfkc["normalizer"] = map[string]any{"type": "NFKC"}
	metaspace := tinyTokenizer(map[string]any{"type": "Metaspace"})
	noByte := tinyTokenizer(gpt2)
	delete(noByte["model"].(map[string]any)["vocab"].(map[string]int), "a")
	badMerge := tinyTokenizer(gpt2)
	delete(badMerge["model"].(map[string]any)["vocab"].(map[string]int), "he")
	noModel := tinyTokenizer(gpt2)
	delete(noModel, "model")
	badMerges := tinyTokenizer(gpt2)
	badMerges["model"].(map[string]any)["merges"] = []string{"h e", "nospace"}

	for _, tc := range []struct {
		name  string
		path  string
		is    error
		parts []string
	}{
		{"missing file", missing, fs.ErrNotExist, []string{missing}},
		{"garbage", garbage, nil, []string{garbage, "malformed"}},
		{"wordpiece", writeJSON(t, wordPiece), ErrUnsupported, []string{"model type \"WordPiece\""}},
		{"nfkc", writeJSON(t, nfkc), ErrUnsupported, []string{"normalizer \"NFKC\""}},
		{"metaspace", writeJSON(t, metaspace), ErrUnsupported, []string{"ByteLevel"}},
		{"byte missing", writeJSON(t, noByte), nil, []string{"byte 0x61"}},
		{"merge result missing", writeJSON(t, badMerge), nil, []string{"not in the vocab"}},
		{"no model", writeJSON(t, noModel), nil, []string{"no \"model\""}},
		{"merge without space", writeJSON(t, badMerges), nil, []string{"\"nospace\" has no space"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := Load(tc.path)
			if err == nil {
				t.Fatalf("Load succeeded: %v", tok)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			msg := err.Error()
			for _, p := range append(tc.parts, tc.path) {
				if !strings.Contains(msg, p) {
					t.Errorf("error %q does not mention %q", msg, p)
				}
			}
		})
	}
}

func TestDefaultPath(t *testing.T) {
	t.Run("env names a missing file", func(t *testing.T) {
		t.Setenv(EnvTokenizer, filepath.Join(t.TempDir(), "nope.json"))
		_, err := Default()
		if err == nil || !strings.Contains(err.Error(), EnvTokenizer) {
			t.Errorf("Default() error = %v, want one naming $%s", err, EnvTokenizer)
		}
	})
	t.Run("not installed", func(t *testing.T) {
		t.Setenv(EnvTokenizer, "")
		cache := t.TempDir()
		t.Setenv("XDG_CACHE_HOME", cache)
		t.Chdir(t.TempDir())
		_, err := Default()
		want := filepath.Join(cache, "cualake", "tokenizer", filepath.FromSlash(PackageRelPath), filepath.FromSlash(ModelRelPath))
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "make setup") ||
			!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "$"+EnvTokenizer) {
			t.Errorf("Default() error = %v, want ErrNotFound naming $%s, %s and `make setup`", err, EnvTokenizer, want)
		}
	})
	t.Run("found in the user cache from any directory", func(t *testing.T) {
		t.Setenv(EnvTokenizer, "")
		cache := t.TempDir()
		t.Setenv("XDG_CACHE_HOME", cache)
		want := filepath.Join(cache, "cualake", "tokenizer", filepath.FromSlash(PackageRelPath), filepath.FromSlash(ModelRelPath))
		if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(want, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Chdir(t.TempDir()) // no go.mod anywhere above
		if p, err := DefaultPath(); err != nil || p != want {
			t.Errorf("DefaultPath() = %q, %v; want %s", p, err, want)
		}
	})
}

func TestNormalizeSlowMatchesXText(t *testing.T) {
	checked := 0
	for _, c := range readFixture(t) {
		want := norm.NFC.String(c.Text)
		if strings.Count(want, "\u034f") != strings.Count(c.Text, "\u034f") {
			continue
		}
		if got := normalizeSlow(c.Text, true, true).s; got != want {
			t.Errorf("normalizeSlow(%q) = %q, x/text NFC = %q", c.Text, got, want)
		}
		checked++
	}
	// Beyond 30 combining marks: full canonical ordering, no U+034F.
	s := "a" + strings.Repeat("\u0301\u0316", 20) + "b"
	want := "\u00e1" + strings.Repeat("\u0316", 20) + strings.Repeat("\u0301", 19) + "b"
	if got := normalizeSlow(s, true, false).s; got != want {
		t.Errorf("normalizeSlow(long run) = %+q, want %+q", got, want)
	}
	if got := normalize(s, true, false).s; got != want {
		t.Errorf("normalize(long run) = %+q, want %+q", got, want)
	}
	t.Logf("%d strings checked", checked)
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"e\u0301", "\u1100\u1161\u11a8", "x\u0323\u0302", "\u212b", "\ufb01", "a\xffb", "\u0344", "ḉ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := normalize(s, true, true)
		if !utf8.ValidString(got.s) {
			t.Fatalf("normalize(%q) is not valid UTF-8", s)
		}
		if !utf8.ValidString(s) {
			return
		}
		want := norm.NFC.String(s)
		if strings.Count(want, "\u034f") == strings.Count(s, "\u034f") && got.s != want {
			t.Fatalf("normalize(%+q) = %+q, x/text gives %+q", s, got.s, want)
		}
	})
}

// FuzzEncode checks that any input encodes without panicking, round-trips
// to its normalised form, and gets in-bounds, ordered spans.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "hello <|im_end|>", "a\xffb", "e\u0301\u0316", "'s  \n\n x", "<|im_start", "😀中"} {
		f.Add(s)
	}
	tok := defaultTok(f)
	f.Fuzz(func(t *testing.T, s string) {
		ids, spans := tok.EncodeOffsets(s)
		if !slices.Equal(ids, tok.Encode(s)) {
			t.Fatalf("EncodeOffsets and Encode disagree on %q", s)
		}
		if got, want := tok.Decode(ids), normalize(s, true, false).s; got != want {
			t.Fatalf("Decode(Encode(%q)) = %q, want %q", s, got, want)
		}
		prevStart, prevEnd := 0, 0
		for _, sp := range spans {
			if sp.Start < prevStart || sp.End < prevEnd || sp.Start > sp.End || sp.End > len(s) {
				t.Fatalf("EncodeOffsets(%q): bad span %+v after %d..%d", s, sp, prevStart, prevEnd)
			}
			prevStart, prevEnd = sp.Start, sp.End
		}
	})
}
