package segment

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/tokenizer"
)

// The chat template's special tokens, short names.
const (
	imStart     = chat.ImStart
	imEnd       = chat.ImEnd
	visionStart = chat.VisionStart
	visionEnd   = chat.VisionEnd
	imagePad    = chat.ImagePad
)

// Codec is an Encoder together with what the segmenter must know about its
// special tokens: their ids, and which of them are boundaries, i.e. atomic
// added tokens around which text is tokenized independently, so that
// Tokenize(a + m + b) == Tokenize(a) + [m] + Tokenize(b). At a boundary the
// token diff of Algorithm 2 needs no re-tokenization of the history. A Codec
// is read-only and safe for concurrent use.
type Codec struct {
	Enc tokenizer.Encoder
	// Ids of the template's special tokens.
	ImStart, ImEnd, VisionStart, VisionEnd, ImagePad int32
	// markers are the boundary tokens' texts, markerIDs their ids.
	markers   []string
	markerIDs []int32
}

// boundaryProbes are texts placed around a special token to check that the
// encoder tokenizes both sides independently of it.
var boundaryProbes = []string{"a", "ab c", " ", "\n", "\n\n", "x\n", "é", "12", "<|"}

// NewCodec inspects enc. The vision tokens must be atomic boundaries (image
// pads are emitted as ids, never as text); <|im_start|> and <|im_end|> must
// exist, and are used as boundaries when they behave as such (otherwise the
// stream falls back to the literal token diff, which is exact but slower).
func NewCodec(enc tokenizer.Encoder) (*Codec, error) {
	c := &Codec{Enc: enc}
	for _, sp := range []struct {
		text     string
		id       *int32
		mustStop bool
	}{{imStart, &c.ImStart, false}, {imEnd, &c.ImEnd, false},
		{visionStart, &c.VisionStart, true}, {visionEnd, &c.VisionEnd, true}, {imagePad, &c.ImagePad, true}} {
		id, ok := enc.TokenID(sp.text)
		if !ok {
			return nil, fmt.Errorf("tokenizer has no token %s, which the Qwen chat template needs", sp.text)
		}
		*sp.id = id
		if isBoundary(enc, sp.text, id) {
			c.markers = append(c.markers, sp.text)
			c.markerIDs = append(c.markerIDs, id)
		} else if sp.mustStop {
			return nil, fmt.Errorf("tokenizer does not encode %s as one atomic added token", sp.text)
		}
	}
	return c, nil
}

func isBoundary(enc tokenizer.Encoder, m string, id int32) bool {
	if !slices.Equal(enc.Encode(m), []int32{id}) {
		return false
	}
	for _, a := range boundaryProbes {
		for _, b := range boundaryProbes {
			want := append(append(enc.Encode(a), id), enc.Encode(b)...)
			if !slices.Equal(enc.Encode(a+m+b), want) {
				return false
			}
		}
	}
	return true
}

// Encode tokenizes text.
func (c *Codec) Encode(text string) []int32 { return c.Enc.Encode(text) }

// startsHard reports whether text begins at a boundary.
func (c *Codec) startsHard(text string) bool {
	for _, m := range c.markers {
		if strings.HasPrefix(text, m) {
			return true
		}
	}
	return false
}

// splitMarkers returns the text before the first boundary token and after
// the last one, and whether there is one.
func (c *Codec) splitMarkers(text string) (head, tail string, sealed bool) {
	first, last := len(text), -1
	for _, m := range c.markers {
		if i := strings.Index(text, m); i >= 0 && i < first {
			first = i
		}
		if i := strings.LastIndex(text, m); i >= 0 && i+len(m) > last {
			last = i + len(m)
		}
	}
	if last < 0 {
		return text, text, false
	}
	return text[:first], text[last:], true
}

// isMarkerID reports whether id is a boundary token.
func (c *Codec) isMarkerID(id int32) bool {
	for _, m := range c.markerIDs {
		if m == id {
			return true
		}
	}
	return false
}
