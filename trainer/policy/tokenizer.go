package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenizer maps text to token ids and back. It is the same interface as
// pipeline/tokenizer's, copied here until the two are wired together.
type Tokenizer interface {
	Encode(string) []int32
	Decode([]int32) string
	TokenID(string) (int32, bool)
	VocabSize() int
}

// Special tokens; they always take ids 0..8 in this order.
const (
	TokPad         = "<pad>"
	TokUnk         = "<unk>"
	TokBOS         = "<bos>"
	TokEOS         = "<eos>"
	TokImStart     = "<|im_start|>"
	TokImEnd       = "<|im_end|>"
	TokVisionStart = "<|vision_start|>"
	TokImagePad    = "<|image_pad|>"
	TokVisionEnd   = "<|vision_end|>"
)

// Fixed ids of the special tokens.
const (
	PadID int32 = iota
	UnkID
	BOSID
	EOSID
	ImStartID
	ImEndID
	VisionStartID
	ImagePadID
	VisionEndID
)

// SpecialTokens lists the special tokens in id order.
var SpecialTokens = []string{TokPad, TokUnk, TokBOS, TokEOS, TokImStart, TokImEnd, TokVisionStart, TokImagePad, TokVisionEnd}

// ActionKinds are the action verbs of the OSWorld-style action space.
var ActionKinds = []string{
	"click", "double_click", "triple_click", "right_click", "middle_click",
	"mouse_move", "drag", "type", "key", "hotkey", "scroll", "wait", "done", "fail",
}

// KeyNames are keyboard keys and scroll directions, always in the vocabulary
// so that any hotkey can be written even if the task pool never mentions it.
var KeyNames = []string{
	"ctrl", "alt", "shift", "meta", "cmd", "win", "super", "fn",
	"enter", "return", "tab", "esc", "escape", "backspace", "delete", "space",
	"up", "down", "left", "right", "home", "end", "pageup", "pagedown", "insert",
	"f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10", "f11", "f12",
}

// GridSize is the side of the action coordinate grid.
const GridSize = 1000

// DefaultCoordStep is the default coordinate bin width on the grid.
const DefaultCoordStep = 20

// vocabFormat identifies the JSON encoding of a Vocab.
const vocabFormat = "cualake-policy-vocab/1"

// VocabOptions control how NewVocab builds a vocabulary.
type VocabOptions struct {
	// CoordStep is the coordinate bin width (grid 0..999); 0 means 20.
	CoordStep int
	// MinCount drops corpus words seen fewer times; 0 means 1.
	MinCount int
	// MaxWords caps the number of corpus words (most frequent first); 0 = no cap.
	MaxWords int
	// Lowercase folds corpus and input words to lower case.
	Lowercase bool
	// PerDocument makes MinCount count the corpus strings a word occurs in
	// rather than its occurrences.
	PerDocument bool
	// Always lists words kept whatever their count.
	Always []string
}

// Vocab is a deterministic word-level tokenizer: special tokens, action
// kinds, key names, coordinate bins ("x:120", "y:40"), ASCII letters, digits
// and punctuation, then the corpus words. Unknown words map to <unk>.
//
// Encode splits on white space; a chunk that is a vocabulary token (for
// example "double_click" or "x:120") or a coordinate ("x:123", snapped to its
// bin) is one token, anything else splits into letter/digit runs and single
// punctuation characters. Special tokens are recognised anywhere. Decode joins
// tokens with single spaces, so Encode(Decode(ids)) == ids for ids without
// <pad>.
type Vocab struct {
	tokens    []string
	ids       map[string]int32
	coordStep int
	lowercase bool
	specials  []string // longest first, for matching inside text
}

var _ Tokenizer = (*Vocab)(nil)

// NewVocab builds a vocabulary from a corpus of strings (instructions,
// accessibility-tree renderings, typed texts). The result depends only on the
// corpus and options, not on their order of arrival.
func NewVocab(corpus []string, opts VocabOptions) (*Vocab, error) {
	if opts.CoordStep == 0 {
		opts.CoordStep = DefaultCoordStep
	}
	if opts.CoordStep < 1 || opts.CoordStep > GridSize {
		return nil, fmt.Errorf("new vocab: coord step %d outside 1..%d", opts.CoordStep, GridSize)
	}
	if opts.MinCount == 0 {
		opts.MinCount = 1
	}
	base := baseTokens(opts.CoordStep)
	v, err := newVocab(base, opts.CoordStep, opts.Lowercase)
	if err != nil {
		return nil, fmt.Errorf("new vocab: %w", err)
	}
	counts := map[string]int{}
	for _, doc := range corpus {
		seen := map[string]bool{}
		for _, piece := range v.pieces(doc) {
			if piece.special {
				continue
			}
			w := piece.text
			if _, known := v.ids[w]; known {
				continue
			}
			if opts.PerDocument {
				if seen[w] {
					continue
				}
				seen[w] = true
			}
			counts[w]++
		}
	}
	for _, w := range opts.Always {
		if _, known := v.ids[w]; !known && counts[w] < opts.MinCount {
			counts[w] = opts.MinCount
		}
	}
	words := make([]string, 0, len(counts))
	for w, c := range counts {
		if c >= opts.MinCount {
			words = append(words, w)
		}
	}
	sort.Slice(words, func(i, j int) bool {
		if counts[words[i]] != counts[words[j]] {
			return counts[words[i]] > counts[words[j]]
		}
		return words[i] < words[j]
	})
	if opts.MaxWords > 0 && len(words) > opts.MaxWords {
		words = words[:opts.MaxWords]
	}
	sort.Strings(words) // ids do not depend on counts, only on membership
	v, err = newVocab(append(base, words...), opts.CoordStep, opts.Lowercase)
	if err != nil {
		return nil, fmt.Errorf("new vocab: %w", err)
	}
	return v, nil
}

// baseTokens lists the corpus-independent tokens in id order.
func baseTokens(step int) []string {
	out := append([]string{}, SpecialTokens...)
	out = append(out, ActionKinds...)
	out = append(out, KeyNames...)
	for _, axis := range []string{"x", "y"} {
		for v := 0; v < GridSize; v += step {
			out = append(out, axis+":"+strconv.Itoa(v))
		}
	}
	for c := 'a'; c <= 'z'; c++ {
		out = append(out, string(c))
	}
	for c := '0'; c <= '9'; c++ {
		out = append(out, string(c))
	}
	for _, c := range "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" {
		out = append(out, string(c))
	}
	return dedupe(out)
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func newVocab(tokens []string, step int, lower bool) (*Vocab, error) {
	if len(tokens) < len(SpecialTokens) {
		return nil, errors.New("vocabulary lacks the special tokens")
	}
	for i, s := range SpecialTokens {
		if tokens[i] != s {
			return nil, fmt.Errorf("token %d is %q, want special token %q", i, tokens[i], s)
		}
	}
	if len(tokens) > 1<<31-1 {
		return nil, errors.New("vocabulary too large")
	}
	v := &Vocab{tokens: append([]string(nil), tokens...), ids: make(map[string]int32, len(tokens)), coordStep: step, lowercase: lower}
	for i, t := range tokens {
		if t == "" || strings.ContainsFunc(t, unicode.IsSpace) {
			return nil, fmt.Errorf("token %d (%q) is empty or contains white space", i, t)
		}
		if _, dup := v.ids[t]; dup {
			return nil, fmt.Errorf("duplicate token %q", t)
		}
		v.ids[t] = int32(i)
	}
	v.specials = append([]string(nil), SpecialTokens...)
	sort.Slice(v.specials, func(i, j int) bool { return len(v.specials[i]) > len(v.specials[j]) })
	return v, nil
}

// VocabSize returns the number of tokens.
func (v *Vocab) VocabSize() int { return len(v.tokens) }

// TokenID returns the id of an exact token string.
func (v *Vocab) TokenID(tok string) (int32, bool) {
	id, ok := v.ids[tok]
	return id, ok
}

// Token returns the string of id, or "" when out of range.
func (v *Vocab) Token(id int32) string {
	if id < 0 || int(id) >= len(v.tokens) {
		return ""
	}
	return v.tokens[id]
}

// Tokens returns a copy of the token list in id order.
func (v *Vocab) Tokens() []string { return append([]string(nil), v.tokens...) }

// CoordStep returns the coordinate bin width.
func (v *Vocab) CoordStep() int { return v.coordStep }

// Encode tokenizes text; unknown words become <unk>.
func (v *Vocab) Encode(text string) []int32 {
	ps := v.pieces(text)
	out := make([]int32, 0, len(ps))
	for _, p := range ps {
		if id, ok := v.ids[p.text]; ok {
			out = append(out, id)
		} else {
			out = append(out, UnkID)
		}
	}
	return out
}

// Decode joins the tokens of ids with single spaces, skipping <pad>; ids out
// of range decode as <unk>.
func (v *Vocab) Decode(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		if id == PadID {
			continue
		}
		t := v.Token(id)
		if t == "" {
			t = TokUnk
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	}
	return b.String()
}

// CoordToken returns the bin token for coordinate value c on axis 'x' or 'y'
// (clamped to the 0..999 grid).
func (v *Vocab) CoordToken(axis byte, c int) string {
	c = max(0, min(GridSize-1, c))
	return string(axis) + ":" + strconv.Itoa(c/v.coordStep*v.coordStep)
}

// CoordValue returns the grid value a coordinate token stands for (the centre
// of its bin) and its axis.
func (v *Vocab) CoordValue(tok string) (axis byte, c int, ok bool) {
	a, n, ok := parseCoord(tok)
	if !ok {
		return 0, 0, false
	}
	n = n / v.coordStep * v.coordStep
	return a, min(GridSize-1, n+v.coordStep/2), true
}

func parseCoord(s string) (byte, int, bool) {
	if len(s) < 3 || (s[0] != 'x' && s[0] != 'y') || s[1] != ':' {
		return 0, 0, false
	}
	n, err := strconv.Atoi(s[2:])
	if err != nil || n < 0 || s[2] == '+' {
		return 0, 0, false
	}
	return s[0], n, true
}

type piece struct {
	text    string
	special bool
}

// pieces splits text into token strings (before id lookup).
func (v *Vocab) pieces(text string) []piece {
	var out []piece
	for len(text) > 0 {
		// the next special token, if any, bounds the current stretch of text
		cut, sp := len(text), ""
		for i := 0; i < len(text); i++ {
			if text[i] != '<' {
				continue
			}
			for _, s := range v.specials {
				if strings.HasPrefix(text[i:], s) {
					cut, sp = i, s
					break
				}
			}
			if sp != "" {
				break
			}
		}
		for _, chunk := range strings.Fields(text[:cut]) {
			out = v.chunkPieces(chunk, out)
		}
		if sp == "" {
			break
		}
		out = append(out, piece{text: sp, special: true})
		text = text[cut+len(sp):]
	}
	return out
}

func (v *Vocab) chunkPieces(chunk string, out []piece) []piece {
	if _, ok := v.ids[chunk]; ok {
		return append(out, piece{text: chunk})
	}
	if axis, n, ok := parseCoord(chunk); ok {
		return append(out, piece{text: v.CoordToken(axis, n)})
	}
	for len(chunk) > 0 {
		r, size := utf8.DecodeRuneInString(chunk)
		if !isWordRune(r) {
			out = append(out, piece{text: chunk[:size]})
			chunk = chunk[size:]
			continue
		}
		end := size
		for end < len(chunk) {
			r2, s2 := utf8.DecodeRuneInString(chunk[end:])
			if !isWordRune(r2) {
				break
			}
			end += s2
		}
		w := chunk[:end]
		if v.lowercase {
			w = strings.ToLower(w)
		}
		out = append(out, piece{text: w})
		chunk = chunk[end:]
	}
	return out
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// vocabJSON is the serialised form of a Vocab.
type vocabJSON struct {
	Format    string   `json:"format"`
	CoordStep int      `json:"coord_step"`
	Lowercase bool     `json:"lowercase"`
	Tokens    []string `json:"tokens"`
}

// MarshalJSON encodes the vocabulary deterministically.
func (v *Vocab) MarshalJSON() ([]byte, error) {
	return json.Marshal(vocabJSON{Format: vocabFormat, CoordStep: v.coordStep, Lowercase: v.lowercase, Tokens: v.tokens})
}

// UnmarshalVocab decodes a vocabulary written by MarshalJSON.
func UnmarshalVocab(data []byte) (*Vocab, error) {
	var j vocabJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("decode vocab: %w", err)
	}
	if j.Format != vocabFormat {
		return nil, fmt.Errorf("decode vocab: format %q, want %q", j.Format, vocabFormat)
	}
	if j.CoordStep < 1 || j.CoordStep > GridSize {
		return nil, fmt.Errorf("decode vocab: coord step %d outside 1..%d", j.CoordStep, GridSize)
	}
	v, err := newVocab(j.Tokens, j.CoordStep, j.Lowercase)
	if err != nil {
		return nil, fmt.Errorf("decode vocab: %w", err)
	}
	return v, nil
}
