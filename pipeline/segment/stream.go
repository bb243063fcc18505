package segment

import "slices"

// Piece is a stretch of context (loss mask 0) with its tokens, as the
// template renders it: chunks of ids that concatenate to Tokenize(text),
// where text is the piece's full text (images standing for their pads).
// Chunks let pieces share the ids of images and template glue.
type Piece struct {
	Chunks [][]int32
	// Len is the total number of ids.
	Len int
	// Images and ImageTokens count the screenshots and their pad tokens.
	Images, ImageTokens int
	// Head is the text before the piece's first boundary token ("" when it
	// starts with one) and HeadLen the length of Tokenize(Head); Tail is the
	// text after its last boundary token; Sealed says whether it has one
	// (if not, Head == Tail == the whole text). The stream needs them only
	// where a boundary is not hard.
	Head    string
	HeadLen int
	Tail    string
	Sealed  bool
}

// TextPiece makes a piece of plain text (special tokens included).
func (c *Codec) TextPiece(text string) Piece {
	ids := c.Encode(text)
	p := Piece{Chunks: [][]int32{ids}, Len: len(ids)}
	p.Head, p.Tail, p.Sealed = c.splitMarkers(text)
	if p.Head != "" {
		p.HeadLen = len(c.Encode(p.Head))
	}
	return p
}

// Concat joins pieces whose junctions are boundaries (the later piece starts
// with a boundary token, or the earlier ends with one).
func Concat(ps ...Piece) Piece {
	var out Piece
	for i, p := range ps {
		out.Chunks = append(out.Chunks, p.Chunks...)
		out.Len += p.Len
		out.Images += p.Images
		out.ImageTokens += p.ImageTokens
		if i == 0 {
			out.Head, out.HeadLen, out.Tail, out.Sealed = p.Head, p.HeadLen, p.Tail, p.Sealed
			continue
		}
		if p.Sealed {
			out.Tail, out.Sealed = p.Tail, true
		} else {
			out.Tail += p.Tail
		}
	}
	return out
}

// messagePiece is a piece the chat template rendered: it starts at a
// boundary token unless head (a text already tokenized as its first headLen
// ids) comes first, and tail is its text after its last boundary token.
func messagePiece(head string, headLen int, tail string, images, imageTokens int, chunks ...[]int32) Piece {
	p := Piece{Chunks: chunks, Images: images, ImageTokens: imageTokens, Head: head, HeadLen: headLen, Tail: tail, Sealed: true}
	for _, ch := range chunks {
		p.Len += len(ch)
	}
	return p
}

// Stream is the token-ID stream of Algorithm 2: ids, loss mask and rollout
// log-probabilities, plus the text of the history after its last boundary
// token, which is all the token diff ever needs to re-tokenize.
type Stream struct {
	// ids, mask and logp are allocated ahead (Reset) and filled up to n;
	// past n they are zero, so context tokens only need their ids written.
	ids  []int32
	mask []int8
	logp []float32
	n    int
	pool *Pool
	// Images and ImageTokens count the screenshots in the stream.
	Images, ImageTokens int
	// Trainable counts mask-1 tokens; NoLogprobs those of them without a
	// recorded log-probability.
	Trainable, NoLogprobs int
	// Merges counts observation appends where the history's last tokens
	// and the observation's first ones merged under re-tokenization (the
	// diff then drops the history's side of the merge, as the literal
	// formula does; the rollout's tokens stay).
	Merges int

	// tail is the history's text after its last boundary token: strings,
	// and response ids decoded only when a non-hard boundary needs them.
	tail []tailPart
}

type tailPart struct {
	text string
	ids  []int32
}

// IDs, Mask and Logp are the stream so far.
func (s *Stream) IDs() []int32 { return s.ids[:s.n] }

// Mask is the loss mask so far.
func (s *Stream) Mask() []int8 { return s.mask[:s.n] }

// Logp is the log-probabilities so far.
func (s *Stream) Logp() []float32 { return s.logp[:s.n] }

// Reset empties the stream, giving it arrays for n tokens (the previous
// arrays belong to whoever took them); it grows as needed.
func (s *Stream) Reset(n int) { s.reset(nil, n) }

// reset is Reset with arrays from pool.
func (s *Stream) reset(pool *Pool, n int) {
	*s = Stream{pool: pool, Merges: s.Merges}
	s.ids, s.mask, s.logp = pool.get(n)
}

// grow makes room for k more tokens.
func (s *Stream) grow(k int) {
	if s.n+k <= len(s.ids) {
		return
	}
	ids, mask, logp := s.pool.get(max(2*len(s.ids), s.n+k))
	copy(ids, s.ids[:s.n])
	copy(mask, s.mask[:s.n])
	copy(logp, s.logp[:s.n])
	s.pool.put(s.ids, s.mask, s.logp)
	s.ids, s.mask, s.logp = ids, mask, logp
}

func (s *Stream) appendIDs(ids []int32) {
	s.grow(len(ids))
	s.n += copy(s.ids[s.n:], ids)
}

func (s *Stream) tailEmpty() bool {
	for _, t := range s.tail {
		if t.text != "" || len(t.ids) > 0 {
			return false
		}
	}
	return true
}

func (s *Stream) tailText(c *Codec) string {
	var b []byte
	for _, t := range s.tail {
		if t.ids != nil {
			b = append(b, c.Enc.Decode(t.ids)...)
		} else {
			b = append(b, t.text...)
		}
	}
	return string(b)
}

// AppendContext appends p with mask 0 as the token diff
// Tokenize(H + p)[len(Tokenize(H)):]. At a hard boundary (p starts with a
// boundary token, or H ends with one) that is p's own tokens; otherwise the
// history's tail and p's head are re-tokenized together.
func (s *Stream) AppendContext(c *Codec, p *Piece) {
	if p.Head == "" || s.tailEmpty() {
		s.grow(p.Len)
		for _, ch := range p.Chunks {
			s.n += copy(s.ids[s.n:], ch)
		}
	} else {
		tail := s.tailText(c)
		tailIDs := c.Encode(tail)
		joint := c.Encode(tail + p.Head)
		l := len(tailIDs)
		if len(joint) < l || !slices.Equal(joint[:l], tailIDs) {
			s.Merges++
		}
		if l < len(joint) {
			s.appendIDs(joint[l:])
		}
		// The rest of p starts at its first boundary token, so its ids
		// follow Tokenize(Head) unchanged.
		skip := p.HeadLen
		for _, ch := range p.Chunks {
			if skip >= len(ch) {
				skip -= len(ch)
				continue
			}
			s.appendIDs(ch[skip:])
			skip = 0
		}
	}
	s.Images += p.Images
	s.ImageTokens += p.ImageTokens
	if p.Sealed {
		s.tail = append(s.tail[:0], tailPart{text: p.Tail})
	} else {
		s.tail = append(s.tail, tailPart{text: p.Tail})
	}
}

// AppendResponse appends the rollout's response ids verbatim with mask 1
// and their log-probabilities (logp nil: not recorded; zeros are written and
// counted in NoLogprobs).
func (s *Stream) AppendResponse(c *Codec, ids []int32, logp []float32) {
	s.grow(len(ids))
	n0 := s.n
	s.n += copy(s.ids[s.n:], ids)
	for i := n0; i < s.n; i++ {
		s.mask[i] = 1
	}
	if logp != nil {
		copy(s.logp[n0:], logp)
	} else {
		s.NoLogprobs += len(ids)
	}
	s.Trainable += len(ids)
	last := -1
	for i := len(ids) - 1; i >= 0; i-- {
		if c.isMarkerID(ids[i]) {
			last = i
			break
		}
	}
	if last >= 0 {
		s.tail = append(s.tail[:0], tailPart{ids: ids[last+1:]})
	} else {
		s.tail = append(s.tail, tailPart{ids: ids})
	}
}
