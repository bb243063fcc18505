package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// qwenPattern is the Split regex of every Qwen2/Qwen2.5/Qwen3 tokenizer.json;
// scanPretoken implements it by hand.
const qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// gpt2Pattern is the reference's ByteLevel pre-tokenizer regex, used when a
// file sets use_regex (not Qwen's case).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// Character classes of the JS engine the reference runs on.
const (
	clsL = 1 << iota // \p{L}
	clsN             // \p{N}
	clsS             // \s
)

// bmpClass caches the class of every BMP character; astral ones are looked
// up in the range tables.
var bmpClass [0x10000]uint8

func init() {
	for _, t := range []struct {
		ranges []uint32
		cls    uint8
	}{{jsLetterRanges[:], clsL}, {jsNumberRanges[:], clsN}, {jsSpaceRanges[:], clsS}} {
		for i := 0; i < len(t.ranges); i += 2 {
			for r := t.ranges[i]; r <= t.ranges[i+1] && r < 0x10000; r++ {
				bmpClass[r] |= t.cls
			}
		}
	}
}

func classOf(r rune) uint8 {
	if r >= 0 && r < 0x10000 {
		return bmpClass[r]
	}
	var c uint8
	if inRanges(jsLetterRanges[:], r) {
		c |= clsL
	}
	if inRanges(jsNumberRanges[:], r) {
		c |= clsN
	}
	return c // no astral whitespace exists
}

// inRanges reports whether r is in a sorted [lo, hi, lo, hi...] table.
func inRanges(t []uint32, r rune) bool {
	lo, hi := 0, len(t)/2
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case uint32(r) < t[2*m]:
			hi = m
		case uint32(r) > t[2*m+1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

func decodeRune(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func lastRune(s string) (rune, int) {
	if c := s[len(s)-1]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeLastRuneInString(s)
}

func letterRunEnd(s string, i int) int {
	for i < len(s) {
		r, n := decodeRune(s, i)
		if classOf(r)&clsL == 0 {
			break
		}
		i += n
	}
	return i
}

// scanPretoken returns the end of the pre-token starting at s[i], i < len(s):
// the match of qwenPattern there, as the reference evaluates it (JS regex
// with the "u" flag, the (?i:...) group rewritten to ASCII classes). Each
// branch below is one alternative, tried in order, with the backtracking
// worked out. s must be valid UTF-8.
func scanPretoken(s string, i int) int {
	// '(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))': b|0x20 folds
	// exactly the two ASCII cases of a letter and nothing else onto it.
	if s[i] == '\'' && i+1 < len(s) {
		switch s[i+1] | 0x20 {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2]|0x20 == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2]|0x20 == 'l' {
				return i + 3
			}
		}
	}
	r0, n0 := decodeRune(s, i)
	c0 := classOf(r0)
	// '[^\r\n\p{L}\p{N}]?\p{L}+': a letter run, optionally led by one
	// character that is none of \r, \n, letter, number.
	if c0&clsL != 0 {
		return letterRunEnd(s, i+n0)
	}
	if c0&clsN == 0 && r0 != '\r' && r0 != '\n' && i+n0 < len(s) {
		if r1, n1 := decodeRune(s, i+n0); classOf(r1)&clsL != 0 {
			return letterRunEnd(s, i+n0+n1)
		}
	}
	// '\p{N}': one number character.
	if c0&clsN != 0 {
		return i + n0
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*': a run of "other" characters, optionally
	// led by a space and followed by line breaks.
	j := i
	if r0 == ' ' {
		j++
	}
	if j < len(s) {
		if r, n := decodeRune(s, j); classOf(r) == 0 {
			k := j + n
			for k < len(s) {
				r, n = decodeRune(s, k)
				if classOf(r) != 0 {
					break
				}
				k += n
			}
			for k < len(s) && (s[k] == '\r' || s[k] == '\n') {
				k++
			}
			return k
		}
	}
	// Only whitespace is left for r0. Measure its run.
	k, lastNL, lastStart := i, -1, i
	for k < len(s) {
		r, n := decodeRune(s, k)
		if classOf(r)&clsS == 0 {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = k
		}
		lastStart = k
		k += n
	}
	// '\s*[\r\n]+': up to and including the run's last line break.
	if lastNL >= 0 {
		return lastNL + 1
	}
	// '\s+(?!\S)': the run, minus its last character unless at the end.
	if k == len(s) {
		return k
	}
	if lastStart > i {
		return lastStart
	}
	// '\s+': a lone whitespace character before a non-space.
	return k
}

// Split modes of the reference's SplitPreTokenizer.
const (
	splitIsolated = iota // matches and the gaps between them are pieces
	splitRemoved         // only the gaps are pieces
	splitInvert          // only the matches are pieces
)

// splitStep is one regex split of a general pre-tokenizer.
type splitStep struct {
	re   *regexp2.Regexp
	mode int
}

type preTokJSON struct {
	Type          string            `json:"type"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Pattern       *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
}

// setPreTokenizer accepts what byte-level BPE files use: ByteLevel, or a
// Sequence of Split steps ending in ByteLevel.
func (t *Tokenizer) setPreTokenizer(raw json.RawMessage) error {
	if isNull(raw) {
		return unsupported("no pre_tokenizer (need ByteLevel)")
	}
	var flat []preTokJSON
	var walk func(raw json.RawMessage) error
	walk = func(raw json.RawMessage) error {
		var p preTokJSON
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("malformed pre_tokenizer: %w", err)
		}
		if p.Type == "Sequence" {
			for _, sub := range p.Pretokenizers {
				if err := walk(sub); err != nil {
					return err
				}
			}
			return nil
		}
		flat = append(flat, p)
		return nil
	}
	if err := walk(raw); err != nil {
		return err
	}
	if len(flat) == 0 || flat[len(flat)-1].Type != "ByteLevel" {
		return unsupported("pre_tokenizer must end with ByteLevel")
	}
	bl := flat[len(flat)-1]
	if bl.AddPrefixSpace {
		return unsupported("ByteLevel add_prefix_space")
	}
	var steps []splitStep
	for _, p := range flat[:len(flat)-1] {
		if p.Type != "Split" {
			return unsupported("pre_tokenizer %q", p.Type)
		}
		if p.Pattern == nil || (p.Pattern.Regex == nil && p.Pattern.String == nil) {
			return fmt.Errorf("malformed pre_tokenizer: Split without a pattern")
		}
		mode := splitIsolated
		switch {
		case p.Invert:
			mode = splitInvert
		case strings.EqualFold(p.Behavior, "removed"):
			mode = splitRemoved
		}
		if p.Pattern.Regex != nil && *p.Pattern.Regex == qwenPattern && mode == splitIsolated && len(flat) == 2 &&
			bl.UseRegex != nil && !*bl.UseRegex {
			t.fastPre = true
			return nil
		}
		var re *regexp2.Regexp
		var err error
		if p.Pattern.Regex != nil {
			re, err = compileJSRegex(*p.Pattern.Regex)
		} else {
			re, err = regexp2.Compile(regexp2.Escape(*p.Pattern.String), regexp2.None)
		}
		if err != nil {
			return unsupported("Split pattern: %v", err)
		}
		steps = append(steps, splitStep{re: re, mode: mode})
	}
	if bl.UseRegex == nil || *bl.UseRegex {
		re, err := compileJSRegex(gpt2Pattern)
		if err != nil {
			return fmt.Errorf("compiling the ByteLevel regex: %w", err)
		}
		steps = append(steps, splitStep{re: re, mode: splitInvert})
	}
	t.preSteps = steps
	return nil
}

// runSteps applies steps to s in turn, calling emit with the byte range
// (relative to the section, s starting at base) of every final piece.
func runSteps(steps []splitStep, s string, base int, emit func(start, end int)) {
	if len(s) == 0 {
		return
	}
	if len(steps) == 0 {
		emit(base, base+len(s))
		return
	}
	st, rest := steps[0], steps[1:]
	// regexp2 reports rune positions; map them to bytes.
	runeOff := make([]int, 0, len(s)+1)
	for i := range s {
		runeOff = append(runeOff, i)
	}
	runeOff = append(runeOff, len(s))
	piece := func(a, b int) {
		if a < b {
			runSteps(rest, s[a:b], base+a, emit)
		}
	}
	prev := 0
	m, err := st.re.FindStringMatch(s)
	for err == nil && m != nil {
		a, b := runeOff[m.Index], runeOff[m.Index+m.Length]
		if st.mode != splitInvert {
			piece(prev, a)
		}
		if st.mode != splitRemoved {
			piece(a, b)
		}
		prev = b
		m, err = st.re.FindNextMatch(m)
	}
	if st.mode != splitInvert {
		piece(prev, len(s))
	}
}

// compileJSRegex compiles a tokenizer.json regex as the reference does
// (`new RegExp(pattern, "gu")` after its fix-ups), translated to regexp2's
// .NET syntax with JS semantics for \s, \p{L}, \p{N}, \d, \w, '.' and '$'.
func compileJSRegex(pattern string) (*regexp2.Regexp, error) {
	p, err := translateJSRegex(pattern)
	if err != nil {
		return nil, err
	}
	return regexp2.Compile(p, regexp2.None)
}

var (
	classOnce                         sync.Once
	letterInline, numInline, spInline string
)

func rangesInline(t []uint32) string {
	var b strings.Builder
	for i := 0; i < len(t); i += 2 {
		fmt.Fprintf(&b, `\x{%x}`, t[i])
		if t[i+1] != t[i] {
			fmt.Fprintf(&b, `-\x{%x}`, t[i+1])
		}
	}
	return b.String()
}

// translateJSRegex rewrites a JS ("u" flag) regex into regexp2 syntax.
func translateJSRegex(pattern string) (string, error) {
	classOnce.Do(func() {
		letterInline = rangesInline(jsLetterRanges[:])
		numInline = rangesInline(jsNumberRanges[:])
		spInline = rangesInline(jsSpaceRanges[:])
	})
	// The reference's own fix-ups (createPattern and PROBLEMATIC_REGEX_MAP).
	for _, c := range []string{"#", "&", "~"} {
		pattern = strings.ReplaceAll(pattern, `\`+c, c)
	}
	pattern = strings.ReplaceAll(pattern, "(?i:'s|'t|'re|'ve|'m|'ll|'d)",
		"(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))")

	var b strings.Builder
	inClass := false
	class := func(inline string, negate bool) error {
		switch {
		case inClass && negate:
			return fmt.Errorf("negated class escape inside [...] in %q", pattern)
		case inClass:
			b.WriteString(inline)
		case negate:
			b.WriteString("[^" + inline + "]")
		default:
			b.WriteString("[" + inline + "]")
		}
		return nil
	}
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			e := pattern[i+1]
			i++
			var err error
			switch e {
			case 's', 'S':
				err = class(spInline, e == 'S')
			case 'd', 'D':
				err = class("0-9", e == 'D')
			case 'w', 'W':
				err = class("a-zA-Z0-9_", e == 'W')
			case 'p', 'P':
				end := strings.IndexByte(pattern[i:], '}')
				if i+1 >= len(pattern) || pattern[i+1] != '{' || end < 0 {
					return "", fmt.Errorf("bad \\%c in %q", e, pattern)
				}
				name := pattern[i+2 : i+end]
				i += end
				switch name {
				case "L", "Letter":
					err = class(letterInline, e == 'P')
				case "N", "Number":
					err = class(numInline, e == 'P')
				default:
					b.WriteString(`\` + string(e) + "{" + name + "}")
				}
			case 'u':
				if i+1 < len(pattern) && pattern[i+1] == '{' {
					b.WriteString(`\x`)
				} else {
					b.WriteString(`\u`)
				}
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
			if err != nil {
				return "", err
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		case c == '.' && !inClass:
			b.WriteString(`[^\n\r\u2028\u2029]`)
		case c == '$' && !inClass:
			b.WriteString(`\z`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
