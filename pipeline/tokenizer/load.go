package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// tokenizerFile is the part of a HuggingFace tokenizer.json that matters for
// encoding and decoding.
type tokenizerFile struct {
	AddedTokens  []addedTokenJSON `json:"added_tokens"`
	Normalizer   json.RawMessage  `json:"normalizer"`
	PreTokenizer json.RawMessage  `json:"pre_tokenizer"`
	Decoder      json.RawMessage  `json:"decoder"`
	Model        *modelJSON       `json:"model"`
}

type addedTokenJSON struct {
	ID      *int32 `json:"id"`
	Content string `json:"content"`
	LStrip  bool   `json:"lstrip"`
	RStrip  bool   `json:"rstrip"`
	Special bool   `json:"special"`
}

type modelJSON struct {
	Type                    string           `json:"type"`
	Vocab                   map[string]int32 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	Dropout                 *float64         `json:"dropout"`
}

// parseMerges accepts both merge encodings: ["a b", ...] (tokenizers <
// 0.20) and [["a", "b"], ...]. Decoding into plain slices (no per-element
// UnmarshalJSON) keeps loading fast.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	rest := bytes.TrimLeft(bytes.TrimSpace(raw)[1:], " \t\r\n")
	if len(rest) > 0 && rest[0] == '"' {
		var strs []string
		if err := json.Unmarshal(raw, &strs); err != nil {
			return nil, fmt.Errorf("malformed model.merges: %w", err)
		}
		pairs := make([][2]string, len(strs))
		for i, s := range strs {
			// Same as the reference's x.split(" ", 2): anything after a
			// second space is dropped.
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("malformed model.merges: merge %d %q has no space", i, s)
			}
			b, _, _ = strings.Cut(b, " ")
			pairs[i] = [2]string{a, b}
		}
		return pairs, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("malformed model.merges: %w", err)
	}
	return pairs, nil
}

// typed is the "type" field common to normalizer, pre_tokenizer and decoder
// objects.
type typed struct {
	Type string `json:"type"`
}

// addedToken is an entry of added_tokens.
type addedToken struct {
	content        string
	id             int32
	lstrip, rstrip bool
	special        bool
}

// mergeVal is what a pair of adjacent symbols merges into, and how early.
type mergeVal struct {
	rank int32 // index in the merges list: lower merges first
	id   int32 // id of the merged token
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// Load reads a HuggingFace tokenizer.json with a byte-level BPE model (the
// Qwen2/Qwen3 family). Errors name the file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	t.path = path
	return t, nil
}

// ErrUnsupported is wrapped by Load for a well-formed tokenizer.json that
// uses features this package does not implement.
var ErrUnsupported = errors.New("unsupported tokenizer")

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)
}

func parse(data []byte) (*Tokenizer, error) {
	var f tokenizerFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("malformed tokenizer.json: %w", err)
	}
	if f.Model == nil {
		return nil, errors.New("malformed tokenizer.json: no \"model\"")
	}
	m := f.Model
	typ := m.Type
	if typ == "" && !isNull(m.Merges) {
		typ = "BPE" // old files omit the type; the reference infers it the same way
	}
	if typ != "BPE" {
		return nil, unsupported("model type %q (only BPE is supported)", m.Type)
	}
	if len(m.Vocab) == 0 {
		return nil, errors.New("malformed tokenizer.json: empty model.vocab")
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, unsupported("end_of_word_suffix %q", *m.EndOfWordSuffix)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, unsupported("continuing_subword_prefix %q", *m.ContinuingSubwordPrefix)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, unsupported("BPE dropout %v", *m.Dropout)
	}

	t := &Tokenizer{ignoreMerges: m.IgnoreMerges}
	if err := t.setNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if err := t.setPreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if err := checkDecoder(f.Decoder); err != nil {
		return nil, err
	}
	if err := t.setVocab(m.Vocab, f.AddedTokens); err != nil {
		return nil, err
	}
	merges, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	if err := t.setMerges(merges); err != nil {
		return nil, err
	}
	t.cache.init()
	return t, nil
}

func (t *Tokenizer) setNormalizer(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var n typed
	if err := json.Unmarshal(raw, &n); err != nil {
		return fmt.Errorf("malformed normalizer: %w", err)
	}
	if n.Type != "NFC" {
		return unsupported("normalizer %q (only NFC or none)", n.Type)
	}
	t.nfc = true
	return nil
}

func checkDecoder(raw json.RawMessage) error {
	if isNull(raw) {
		return unsupported("no decoder (need ByteLevel)")
	}
	var d typed
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("malformed decoder: %w", err)
	}
	if d.Type != "ByteLevel" {
		return unsupported("decoder %q (only ByteLevel)", d.Type)
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// setVocab builds the id tables. Added tokens override the model vocab, as
// in the reference.
func (t *Tokenizer) setVocab(vocab map[string]int32, added []addedTokenJSON) error {
	size := 0
	for tok, id := range vocab {
		if id < 0 {
			return fmt.Errorf("malformed tokenizer.json: token %q has negative id %d", tok, id)
		}
		size = max(size, int(id)+1)
	}
	for _, a := range added {
		if a.ID == nil || *a.ID < 0 {
			return fmt.Errorf("malformed tokenizer.json: added token %q has no valid id", a.Content)
		}
		if a.Content == "" {
			return fmt.Errorf("malformed tokenizer.json: added token %d has empty content", *a.ID)
		}
		size = max(size, int(*a.ID)+1)
	}
	if size > 1<<24 {
		return fmt.Errorf("malformed tokenizer.json: id %d is implausibly large", size-1)
	}

	t.tokens = make([]string, size)
	t.added = make([]bool, size)
	t.vocab = make(map[string]int32, len(vocab)+len(added))
	for tok, id := range vocab {
		t.vocab[tok] = id
		t.tokens[id] = tok
	}
	for _, a := range added {
		id := *a.ID
		t.vocab[a.Content] = id
		t.tokens[id] = a.Content
		t.added[id] = true
		t.addedToks = append(t.addedToks, addedToken{content: a.Content, id: id, lstrip: a.LStrip, rstrip: a.RStrip, special: a.Special})
	}
	t.addedTrie = newAddedMatcher(t.addedToks)

	// Decoded bytes of every id, in one arena.
	t.tokOff = make([]uint32, size+1)
	arena := make([]byte, 0, size*8)
	for id, tok := range t.tokens {
		t.tokOff[id] = uint32(len(arena))
		if t.added[id] {
			arena = append(arena, tok...)
			continue
		}
		var ok bool
		arena, ok = appendByteLevelDecoded(arena, tok)
		if !ok {
			return fmt.Errorf("malformed tokenizer.json: token %d %q is not byte-level encoded", id, tok)
		}
	}
	t.tokOff[size] = uint32(len(arena))
	t.arena = arena

	// Every single byte must be a token, so BPE never needs an unknown token.
	for b := 0; b < 256; b++ {
		id, ok := t.vocab[string(byteToRune[b])]
		if !ok || t.added[id] {
			return fmt.Errorf("malformed tokenizer.json: vocab lacks the byte-level token for byte 0x%02x", b)
		}
		t.byteID[b] = id
	}

	if t.ignoreMerges {
		t.rawVocab = make(map[string]int32, len(vocab)+len(added))
		for id := range t.tokens {
			if t.tokens[id] == "" || t.added[id] {
				continue
			}
			t.rawVocab[string(t.tokenBytes(int32(id)))] = int32(id)
		}
		// The reference looks words up in a map that also holds added tokens
		// keyed by their content, which a byte-level word can only equal when
		// the content is itself byte-level text.
		for _, a := range t.addedToks {
			if raw, ok := appendByteLevelDecoded(nil, a.content); ok {
				t.rawVocab[string(raw)] = a.id
			}
		}
	}
	return nil
}

// setMerges builds the pair→merge table. A merge whose parts are not tokens
// can never fire (every BPE symbol is a token) and is skipped; a merge whose
// result is not a token makes the file unusable.
func (t *Tokenizer) setMerges(merges [][2]string) error {
	t.merges = make(map[uint64]mergeVal, len(merges))
	for rank, mg := range merges {
		a, okA := t.vocab[mg[0]]
		b, okB := t.vocab[mg[1]]
		if !okA || !okB || t.added[a] || t.added[b] {
			continue
		}
		id, ok := t.vocab[mg[0]+mg[1]]
		if !ok {
			return fmt.Errorf("malformed tokenizer.json: merge %d (%q %q) yields %q, which is not in the vocab", rank, mg[0], mg[1], mg[0]+mg[1])
		}
		// A repeated pair keeps its last rank, as the reference's Map does.
		t.merges[pairKey(a, b)] = mergeVal{rank: int32(rank), id: id}
	}
	return nil
}

// byteToRune is GPT-2's bytes_to_unicode: printable bytes map to themselves,
// the rest to U+0100 onwards, so that every byte is a visible character.
var byteToRune [256]rune

// runeToByte inverts byteToRune; -1 for runes outside the alphabet.
var runeToByte [324]int16

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
	}
	for i := range runeToByte {
		runeToByte[i] = -1
	}
	for b, r := range byteToRune {
		runeToByte[r] = int16(b)
	}
}

// appendByteLevelDecoded appends the raw bytes a byte-level token stands for;
// ok is false if tok has a character outside the byte-level alphabet.
func appendByteLevelDecoded(dst []byte, tok string) ([]byte, bool) {
	for _, r := range tok {
		if r < 0 || int(r) >= len(runeToByte) || runeToByte[r] < 0 {
			return dst, false
		}
		dst = append(dst, byte(runeToByte[r]))
	}
	return dst, true
}
