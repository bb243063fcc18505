package tokenizer

import (
	"slices"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normText is a text section after UTF-8 repair and NFC, with what is needed
// to map its byte positions back to the source.
type normText struct {
	s string
	// anchors map positions in s to the source; nil when s is the source
	// itself or spans were not asked for. Sorted, ending with a sentinel
	// {len(s), len(src)}.
	anchors []anchor
}

// anchor says that s[out:] starts where src[src:] does. Between an
// identity anchor and the next, bytes map one to one; otherwise the stretch
// maps as a whole.
type anchor struct {
	out, src int32
	identity bool
}

func (n *normText) find(pos int) int {
	k, found := slices.BinarySearchFunc(n.anchors, int32(pos), func(a anchor, p int32) int { return int(a.out - p) })
	if !found {
		k--
	}
	return k
}

// srcStart maps a position in s to the source, rounding down inside a
// changed stretch.
func (n *normText) srcStart(pos int) int {
	if n.anchors == nil {
		return pos
	}
	a := n.anchors[n.find(pos)]
	if a.identity {
		return int(a.src) + pos - int(a.out)
	}
	return int(a.src)
}

// srcEnd maps a position in s to the source, rounding up inside a changed
// stretch.
func (n *normText) srcEnd(pos int) int {
	if n.anchors == nil {
		return pos
	}
	k := n.find(pos)
	a := n.anchors[k]
	switch {
	case int(a.out) == pos:
		return int(a.src)
	case a.identity:
		return int(a.src) + pos - int(a.out)
	default:
		return int(n.anchors[k+1].src)
	}
}

// normalize returns src as the reference sees it: invalid UTF-8 replaced by
// U+FFFD (WHATWG TextDecoder rules), then NFC if nfc is set. Stretches that
// are already fine are copied; only the rest goes through normalizeSlow.
func normalize(src string, nfc, align bool) normText {
	if isASCII(src) {
		return normText{s: src}
	}
	if utf8.ValidString(src) && (!nfc || norm.NFC.IsNormalString(src)) {
		return normText{s: src}
	}
	out := make([]byte, 0, len(src)+8)
	var anchors []anchor
	inv := -1 // start of the next invalid UTF-8 sequence at or after i
	for i := 0; i < len(src); {
		if inv < i {
			inv = i + firstInvalid(src[i:])
		}
		if n := i + normalPrefix(src[i:inv], len(src)-i, nfc); n > i {
			if align {
				anchors = append(anchors, anchor{int32(len(out)), int32(i), true})
			}
			out = append(out, src[i:n]...)
			i = n
			continue
		}
		// A stretch needing work runs to the next character that starts a
		// new normalisation segment, so it normalises independently.
		_, j := decodeRuneWHATWG(src, i)
		j += i
		for j < len(src) && !segmentStart(src, j, nfc) {
			_, n := decodeRuneWHATWG(src, j)
			j += n
		}
		part := normalizeSlow(src[i:j], nfc, align)
		for _, a := range part.anchors[:max(len(part.anchors)-1, 0)] {
			anchors = append(anchors, anchor{a.out + int32(len(out)), a.src + int32(i), a.identity})
		}
		out = append(out, part.s...)
		i = j
	}
	if !align {
		return normText{s: string(out)}
	}
	anchors = append(anchors, anchor{int32(len(out)), int32(len(src)), false})
	return normText{s: string(out), anchors: anchors}
}

// normalPrefix returns how much of valid, the valid UTF-8 start of a
// rest-byte remainder of the text, can be copied as is: with nfc, the NFC
// part ending at a segment boundary.
func normalPrefix(valid string, rest int, nfc bool) int {
	if !nfc {
		return len(valid)
	}
	n := norm.NFC.QuickSpanString(valid)
	if n == len(valid) && n < rest {
		return n // an invalid sequence follows: U+FFFD starts a segment
	}
	// x/text may stop inside a run of combining marks (its stream-safe
	// limit); back up to where a segment starts.
	for n > 0 && n < len(valid) && !boundaryBefore(valid, n) {
		_, size := utf8.DecodeLastRuneInString(valid[:n])
		n -= size
	}
	return n
}

// firstInvalid returns the index of the first invalid UTF-8 sequence in s,
// or len(s).
func firstInvalid(s string) int {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(s)
}

// segmentStart reports whether a stretch needing work can end before s[i]:
// a normalisation boundary, or with only UTF-8 repair, any valid character.
func segmentStart(s string, i int, nfc bool) bool {
	if nfc {
		return boundaryBefore(s, i)
	}
	return validAt(s, i)
}

// boundaryBefore reports whether the character at s[i:] starts a
// normalisation segment: nothing before it can combine with what follows.
func boundaryBefore(s string, i int) bool {
	if s[i] < utf8.RuneSelf || !validAt(s, i) {
		return true // ASCII and U+FFFD never combine backwards
	}
	return norm.NFC.PropertiesString(s[i:]).BoundaryBefore()
}

func validAt(s string, i int) bool {
	r, n := utf8.DecodeRuneInString(s[i:])
	return !(r == utf8.RuneError && n <= 1)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// nfcRune is a character on its way through normalisation, with the source
// characters (indices into the decoded source) it came from.
type nfcRune struct {
	r          rune
	ccc        uint8
	minS, maxS int32
}

// normalizeSlow is our own NFC: full canonical decomposition, canonical
// ordering, canonical composition. golang.org/x/text's NFC cannot be used
// as-is because it enforces the Stream-Safe Text Format (it inserts U+034F
// after 30 combining marks), which ICU, and so the reference, does not.
// x/text still supplies the Unicode data: decompositions, combining classes
// and, through composePair, the composition pairs.
func normalizeSlow(src string, nfc, align bool) normText {
	// Decode with WHATWG replacement, remembering where each character began.
	var srcOff []int32
	var rs []nfcRune
	for i := 0; i < len(src); {
		r, n := decodeRuneWHATWG(src, i)
		si := int32(len(srcOff))
		srcOff = append(srcOff, int32(i))
		i += n
		if !nfc {
			rs = append(rs, nfcRune{r: r, minS: si, maxS: si})
			continue
		}
		rs = appendDecomposed(rs, r, si)
	}
	srcOff = append(srcOff, int32(len(src)))

	if nfc {
		canonicalOrder(rs)
		rs = compose(rs)
	}

	out := make([]byte, 0, len(src)+8)
	if !align {
		for _, c := range rs {
			out = utf8.AppendRune(out, c.r)
		}
		return normText{s: string(out)}
	}
	// Cluster output characters whose source ranges overlap, so anchors are
	// monotone in both texts.
	type cluster struct{ out, minS, maxS int32 }
	var stack []cluster
	for _, c := range rs {
		cur := cluster{int32(len(out)), c.minS, c.maxS}
		for len(stack) > 0 {
			top := stack[len(stack)-1]
			if top.maxS < cur.minS {
				break
			}
			cur = cluster{top.out, min(top.minS, cur.minS), max(top.maxS, cur.maxS)}
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, cur)
		out = utf8.AppendRune(out, c.r)
	}
	anchors := make([]anchor, 0, len(stack)+2)
	if len(stack) == 0 || stack[0].out != 0 || stack[0].minS != 0 {
		anchors = append(anchors, anchor{0, 0, false})
	}
	for _, c := range stack {
		anchors = append(anchors, anchor{c.out, srcOff[c.minS], false})
	}
	anchors = append(anchors, anchor{int32(len(out)), int32(len(src)), false})
	return normText{s: string(out), anchors: anchors}
}

// Hangul syllable constants (Unicode §3.12).
const (
	hangulSBase  = 0xAC00
	hangulLBase  = 0x1100
	hangulVBase  = 0x1161
	hangulTBase  = 0x11A7
	hangulTCount = 28
	hangulNCount = 21 * 28
	hangulSCount = 19 * 21 * 28
)

// appendDecomposed appends the full canonical decomposition of r.
func appendDecomposed(rs []nfcRune, r rune, si int32) []nfcRune {
	if r < utf8.RuneSelf {
		return append(rs, nfcRune{r: r, minS: si, maxS: si})
	}
	if s := r - hangulSBase; s >= 0 && s < hangulSCount {
		rs = append(rs,
			nfcRune{r: hangulLBase + s/hangulNCount, minS: si, maxS: si},
			nfcRune{r: hangulVBase + (s%hangulNCount)/hangulTCount, minS: si, maxS: si})
		if t := s % hangulTCount; t != 0 {
			rs = append(rs, nfcRune{r: hangulTBase + t, minS: si, maxS: si})
		}
		return rs
	}
	var buf [utf8.UTFMax]byte
	p := norm.NFD.Properties(utf8.AppendRune(buf[:0], r))
	d := p.Decomposition()
	if d == nil {
		return append(rs, nfcRune{r: r, ccc: p.CCC(), minS: si, maxS: si})
	}
	for len(d) > 0 {
		dr, n := utf8.DecodeRune(d)
		rs = append(rs, nfcRune{r: dr, ccc: cccOf(dr), minS: si, maxS: si})
		d = d[n:]
	}
	return rs
}

func cccOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return 0
	}
	var buf [utf8.UTFMax]byte
	return norm.NFD.Properties(utf8.AppendRune(buf[:0], r)).CCC()
}

// canonicalOrder stably sorts every run of non-starters by combining class.
func canonicalOrder(rs []nfcRune) {
	for i := 0; i < len(rs); {
		if rs[i].ccc == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && rs[j].ccc != 0 {
			j++
		}
		slices.SortStableFunc(rs[i:j], func(a, b nfcRune) int { return int(a.ccc) - int(b.ccc) })
		i = j
	}
}

// compose is the canonical composition algorithm of UAX #15, in place.
func compose(rs []nfcRune) []nfcRune {
	out := rs[:0]
	starter := -1 // index in out of the last starter
	lastCCC := -1 // ccc of the last character appended to out
	for _, c := range rs {
		if starter >= 0 {
			adjacent := starter == len(out)-1
			// c is blocked from the starter by anything in between with a
			// class of zero or not lower than c's.
			if adjacent || (lastCCC != 0 && lastCCC < int(c.ccc)) {
				if comp, ok := composePair(out[starter].r, c.r); ok {
					st := &out[starter]
					st.r = comp
					st.minS = min(st.minS, c.minS)
					st.maxS = max(st.maxS, c.maxS)
					continue
				}
			}
		}
		if c.ccc == 0 {
			starter = len(out)
		}
		lastCCC = int(c.ccc)
		out = append(out, c)
	}
	return out
}

var (
	pairMu    sync.RWMutex
	pairCache = map[[2]rune]rune{}
)

// composePair returns the primary composite of a and b, if there is one.
// It asks x/text's NFC about the two-character string: in compose a is
// always stable under NFC and every mark already composed into it has a
// class no higher than b's, so NFC(ab) is one character exactly when the
// pair composes. Results are cached; the cache is cleared if it grows large.
func composePair(a, b rune) (rune, bool) {
	key := [2]rune{a, b}
	pairMu.RLock()
	c, ok := pairCache[key]
	pairMu.RUnlock()
	if !ok {
		var buf [2 * utf8.UTFMax]byte
		in := utf8.AppendRune(utf8.AppendRune(buf[:0], a), b)
		outB := norm.NFC.Bytes(in)
		c = -1
		if r, n := utf8.DecodeRune(outB); n == len(outB) && r != utf8.RuneError {
			c = r
		}
		pairMu.Lock()
		if len(pairCache) > 1<<16 {
			clear(pairCache)
		}
		pairCache[key] = c
		pairMu.Unlock()
	}
	return c, c >= 0
}

// decodeRuneWHATWG decodes the character at s[i:], returning U+FFFD for an
// invalid sequence and consuming its maximal subpart, as the WHATWG UTF-8
// decoder (and Python's errors="replace") do.
func decodeRuneWHATWG(s string, i int) (rune, int) {
	b := s[i]
	if b < utf8.RuneSelf {
		return rune(b), 1
	}
	need, lo, hi := 0, byte(0x80), byte(0xBF)
	switch {
	case b >= 0xC2 && b <= 0xDF:
		need = 1
	case b == 0xE0:
		need, lo = 2, 0xA0
	case b >= 0xE1 && b <= 0xEC, b == 0xEE, b == 0xEF:
		need = 2
	case b == 0xED:
		need, hi = 2, 0x9F
	case b == 0xF0:
		need, lo = 3, 0x90
	case b >= 0xF1 && b <= 0xF3:
		need = 3
	case b == 0xF4:
		need, hi = 3, 0x8F
	default:
		return utf8.RuneError, 1
	}
	j := i + 1
	for k := 0; k < need; k++ {
		if j >= len(s) {
			return utf8.RuneError, j - i
		}
		c := s[j]
		if k > 0 {
			lo, hi = 0x80, 0xBF
		}
		if c < lo || c > hi {
			return utf8.RuneError, j - i
		}
		j++
	}
	r, _ := utf8.DecodeRuneInString(s[i:j])
	return r, j - i
}

// appendValidUTF8 appends b to dst with invalid UTF-8 replaced by U+FFFD per
// maximal subpart.
func appendValidUTF8(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return append(dst, b...)
	}
	s := string(b)
	for i := 0; i < len(s); {
		r, n := decodeRuneWHATWG(s, i)
		if r == utf8.RuneError && s[i:i+n] != "\uFFFD" {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return dst
}
