package view

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Decoder turns token ids into text, as *tokenizer.Tokenizer (Qwen3) does.
type Decoder interface {
	Decode(ids []int32) string
}

// Tokenizers finds the decoder for a segments.tokenizer value (such as
// "tokenizer.json@sha256:…"). An error is shown
// on the page next to the raw ids; it does not fail the page.
type Tokenizers func(name string) (Decoder, error)

// TurnTokens is a turn's part of the segment that trains it: the context
// tokens since the previous trained response (mask 0) and its own trained
// tokens (mask 1).
type TurnTokens struct {
	Context        []int32
	ContextSkipped int // older context tokens of the item left out
	Trained        []int32
	Start, End     int // the trained tokens' positions in the item
}

// maxContext bounds the context tokens shown before a turn's response.
const maxContext = 600

// runs returns the maximal [start, end) ranges where mask is 1.
func runs(mask []int8) [][2]int {
	var out [][2]int
	for i := 0; i < len(mask); {
		if mask[i] != 1 {
			i++
			continue
		}
		j := i
		for j < len(mask) && mask[j] == 1 {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// attachTokens gives every turn its segment and tokens: the trained runs of
// a segment are its turns FirstStep..LastStep in order (each response is
// one run of mask-1 tokens between context). It returns a note when a
// segment's runs do not match its turns, or when there are no segments.
func attachTokens(turns []Turn, segs []Segment) string {
	if len(segs) == 0 {
		return "no segment of this snapshot holds this trajectory (the segments table holds the latest segment run only)"
	}
	var notes []string
	for k := range segs {
		s := &segs[k]
		rs := runs(s.LossMask)
		want := int(s.LastStep-s.FirstStep) + 1
		if len(rs) != want || s.FirstStep < 0 || int(s.LastStep) >= len(turns) {
			notes = append(notes, fmt.Sprintf("segment %s trains turns %d..%d but has %d trained run(s); its tokens are not split by turn",
				s.ID, s.FirstStep, s.LastStep, len(rs)))
			continue
		}
		prev := 0
		for j, r := range rs {
			tu := &turns[int(s.FirstStep)+j]
			from := prev
			skipped := 0
			if r[0]-from > maxContext {
				skipped = r[0] - maxContext - from
				from = r[0] - maxContext
			}
			tu.Segment = s
			tu.Tokens = &TurnTokens{Context: s.InputIDs[from:r[0]], ContextSkipped: skipped, Trained: s.InputIDs[r[0]:r[1]], Start: r[0], End: r[1]}
			prev = r[1]
		}
	}
	return strings.Join(notes, "; ")
}

// piece is one displayed token, or a run of one repeated token.
type piece struct {
	ID    int32
	Text  string
	Count int
}

// pieces decodes ids one by one (dec nil: the ids themselves), folding
// runs of 4 or more equal ids (image pad tokens) into one piece.
func pieces(ids []int32, dec Decoder) []piece {
	var out []piece
	for i := 0; i < len(ids); {
		j := i
		for j < len(ids) && ids[j] == ids[i] {
			j++
		}
		n := j - i
		if n < 4 {
			n = 1
		}
		text := fmt.Sprint(ids[i])
		if dec != nil {
			text = dec.Decode(ids[i : i+1])
			if !utf8.ValidString(text) {
				text = strings.ToValidUTF8(text, "\uFFFD")
			}
		}
		out = append(out, piece{ID: ids[i], Text: text, Count: n})
		i += n
	}
	return out
}
