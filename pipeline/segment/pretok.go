package segment

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// The pre-tokenized format is JSON lines, for running the mode algorithms
// elsewhere on exactly our input (bench/segment_alg2.py): a header line
//
//	{"format": "cualake-segment-pretok/1", "vision_start": ID, "vision_end": ID, "image_pad": ID, "im_end": ID}
//
// then one line per trajectory
//
//	{"id": "...", "prefix": PIECE, "turns": [{"step": 0, "fresh": PIECE, "live": PIECE,
//	  "resp": [ids], "logp": [floats] or null, "ctx": PIECE, "summary": PIECE}, ...]}
//
// where a PIECE is a list of chunks, each a list of ids or {"image": N},
// which stands for <|vision_start|>, N pads, <|vision_end|>. A piece's
// tokens are its chunks concatenated, and every piece starts at a boundary
// token, so Tokenize(H) of a history H is the concatenation of its pieces.
// Turn 0's "live" is empty (it follows the prefix, as "fresh").

// PretokFormat names the format in its header line.
const PretokFormat = "cualake-segment-pretok/1"

type pretokHeader struct {
	Format      string `json:"format"`
	VisionStart int32  `json:"vision_start"`
	VisionEnd   int32  `json:"vision_end"`
	ImagePad    int32  `json:"image_pad"`
	ImEnd       int32  `json:"im_end"`
}

type pretokTraj struct {
	ID     string       `json:"id"`
	Prefix []chunkJSON  `json:"prefix"`
	Turns  []pretokTurn `json:"turns"`
}

type pretokTurn struct {
	Step    int32       `json:"step"`
	Fresh   []chunkJSON `json:"fresh"`
	Live    []chunkJSON `json:"live"`
	Resp    []int32     `json:"resp"`
	Logp    []float32   `json:"logp"`
	Ctx     []chunkJSON `json:"ctx"`
	Summary []chunkJSON `json:"summary"`
}

// chunkJSON is ids, or an image of Image pads when IDs is nil.
type chunkJSON struct {
	IDs   []int32
	Image int
}

// MarshalJSON writes ids as a plain array (fast: ids are most of the file).
func (c chunkJSON) MarshalJSON() ([]byte, error) {
	if c.IDs == nil {
		return []byte(`{"image":` + strconv.Itoa(c.Image) + `}`), nil
	}
	b := make([]byte, 0, 6*len(c.IDs)+2)
	b = append(b, '[')
	for i, id := range c.IDs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads an id array or an image object.
func (c *chunkJSON) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var img struct {
			Image int `json:"image"`
		}
		if err := json.Unmarshal(b, &img); err != nil {
			return err
		}
		if img.Image < 0 {
			return fmt.Errorf("image of %d pads", img.Image)
		}
		c.Image = img.Image
		return nil
	}
	c.IDs = []int32{}
	return json.Unmarshal(b, &c.IDs)
}

// PretokWriter writes the pre-tokenized format.
type PretokWriter struct {
	w *bufio.Writer
	c *Codec
}

// NewPretokWriter writes the header line.
func NewPretokWriter(w io.Writer, c *Codec) (*PretokWriter, error) {
	pw := &PretokWriter{w: bufio.NewWriterSize(w, 1<<20), c: c}
	b, _ := json.Marshal(pretokHeader{Format: PretokFormat, VisionStart: c.VisionStart, VisionEnd: c.VisionEnd, ImagePad: c.ImagePad, ImEnd: c.ImEnd})
	_, err := pw.w.Write(append(b, '\n'))
	return pw, err
}

// Write writes one prepared trajectory, all its pieces filled.
func (pw *PretokWriter) Write(id string, p *Prepared) error {
	g := segmenter{p: p}
	t := pretokTraj{ID: id, Prefix: pw.chunks(&p.Prefix), Turns: []pretokTurn{}}
	for i := range p.Turns {
		ctx, sum := g.ctx(i), g.summary(i)
		if g.err != nil {
			return g.err
		}
		tu := &p.Turns[i]
		t.Turns = append(t.Turns, pretokTurn{Step: tu.Step, Fresh: pw.chunks(&tu.Fresh), Live: pw.chunks(&tu.Live),
			Resp: tu.Resp, Logp: tu.Logp, Ctx: pw.chunks(ctx), Summary: pw.chunks(sum)})
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = pw.w.Write(append(b, '\n'))
	return err
}

// Flush flushes the buffered output.
func (pw *PretokWriter) Flush() error { return pw.w.Flush() }

// chunks writes a piece's ids, runs of <|vision_start|> pads
// <|vision_end|> as image chunks.
func (pw *PretokWriter) chunks(p *Piece) []chunkJSON {
	out := []chunkJSON{}
	var run []int32
	for _, ch := range p.Chunks {
		for i := 0; i < len(ch); i++ {
			if ch[i] == pw.c.VisionStart {
				n := 0
				for i+1+n < len(ch) && ch[i+1+n] == pw.c.ImagePad {
					n++
				}
				if i+1+n < len(ch) && ch[i+1+n] == pw.c.VisionEnd {
					if len(run) > 0 {
						out = append(out, chunkJSON{IDs: run})
						run = nil
					}
					out = append(out, chunkJSON{Image: n})
					i += n + 1
					continue
				}
			}
			run = append(run, ch[i])
		}
	}
	if len(run) > 0 {
		out = append(out, chunkJSON{IDs: run})
	}
	return out
}

// PretokTrajectory is one trajectory read back from the pre-tokenized
// format.
type PretokTrajectory struct {
	ID       string
	Prepared *Prepared
}

// ReadPretok reads the pre-tokenized format; codec gets the special token
// ids of its header (image chunks are shared slices).
func ReadPretok(r io.Reader) (*Codec, []PretokTrajectory, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	var h pretokHeader
	if err := dec.Decode(&h); err != nil {
		return nil, nil, fmt.Errorf("pretok header: %w", err)
	}
	if h.Format != PretokFormat {
		return nil, nil, fmt.Errorf("pretok header: format %q, want %q", h.Format, PretokFormat)
	}
	c := &Codec{VisionStart: h.VisionStart, VisionEnd: h.VisionEnd, ImagePad: h.ImagePad, ImEnd: h.ImEnd,
		markerIDs: []int32{h.VisionStart, h.VisionEnd, h.ImagePad, h.ImEnd}}
	images := map[int][]int32{}
	piece := func(chs []chunkJSON) Piece {
		p := Piece{Sealed: true}
		for _, ch := range chs {
			ids := ch.IDs
			if ids == nil {
				ids = images[ch.Image]
				if ids == nil {
					ids = make([]int32, ch.Image+2)
					ids[0], ids[ch.Image+1] = h.VisionStart, h.VisionEnd
					for i := 1; i <= ch.Image; i++ {
						ids[i] = h.ImagePad
					}
					images[ch.Image] = ids
				}
				p.Images++
				p.ImageTokens += ch.Image
			}
			p.Chunks = append(p.Chunks, ids)
			p.Len += len(ids)
		}
		return p
	}
	var out []PretokTrajectory
	for line := 2; ; line++ {
		var t pretokTraj
		if err := dec.Decode(&t); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("pretok line %d: %w", line, err)
		}
		p := &Prepared{Prefix: piece(t.Prefix), Turns: make([]Turn, len(t.Turns))}
		for i, tu := range t.Turns {
			if len(tu.Resp) == 0 || (tu.Logp != nil && len(tu.Logp) != len(tu.Resp)) {
				return nil, nil, fmt.Errorf("pretok line %d (%s) turn %d: %d response ids, %d logprobs", line, t.ID, i, len(tu.Resp), len(tu.Logp))
			}
			p.Turns[i] = Turn{Step: tu.Step, Fresh: piece(tu.Fresh), Live: piece(tu.Live), Resp: tu.Resp, Logp: tu.Logp,
				Ctx: piece(tu.Ctx), Summary: piece(tu.Summary), ready: true}
		}
		out = append(out, PretokTrajectory{ID: t.ID, Prepared: p})
	}
	return c, out, nil
}

// Digest adds a trajectory's items to h in the layout
// bench/segment_alg2.py --check hashes: per item, the trajectory id, a NUL,
// the item index and first and last trained turn as decimal text separated
// by NULs and ending in one, then ids (int32), mask (int8) and logp
// (float32), little-endian.
func Digest(h io.Writer, id string, items []Item) {
	var buf []byte
	for k, it := range items {
		buf = buf[:0]
		buf = append(buf, id...)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, int64(k), 10)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, int64(it.First), 10)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, int64(it.Last), 10)
		buf = append(buf, 0)
		for _, v := range it.IDs {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
		}
		for _, v := range it.Mask {
			buf = append(buf, byte(v))
		}
		for _, v := range it.Logp {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		h.Write(buf)
	}
}
