// Package chat renders multi-turn computer-use conversations with Qwen's
// chat template into token ids, with a per-token annotation (message, part,
// role, kind) so a segmenter can put the loss mask on assistant content only.
//
// Every message renders as
//
//	<|im_start|>{role}\n{content}<|im_end|>\n
//
// where content is the message's parts in order: text as is, and each image
// as <|vision_start|> + N x <|image_pad|> + <|vision_end|>, N from ImageSpec
// (Qwen2.5-VL/Qwen3-VL smart_resize). This is Qwen2-VL/Qwen2.5-VL's
// template without its default system prompt or vision ids, and Qwen3's for
// messages without <think> rewriting.
//
// The ids equal tokenizing the whole rendered text at once (what HF
// processors do): text between two template special tokens is encoded as a
// single string. With an encoder that is not a tokenizer.OffsetEncoder, the
// header and each text part are encoded separately instead, which can differ
// where they touch (e.g. content starting with "\n").
package chat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cualake/cualake/pipeline/tokenizer"
)

// Role is who speaks a message.
type Role uint8

// Roles of the template. The zero Role is invalid.
const (
	System Role = iota + 1
	User
	Assistant
)

// String is the role's name as written in the template.
func (r Role) String() string {
	switch r {
	case System:
		return "system"
	case User:
		return "user"
	case Assistant:
		return "assistant"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// ParseRole parses "system", "user" or "assistant".
func ParseRole(s string) (Role, error) {
	switch s {
	case "system":
		return System, nil
	case "user":
		return User, nil
	case "assistant":
		return Assistant, nil
	}
	return 0, fmt.Errorf("chat: unknown role %q (want system, user or assistant)", s)
}

// MarshalText writes the role's name, so roles read and write as JSON strings.
func (r Role) MarshalText() ([]byte, error) {
	if !r.valid() {
		return nil, fmt.Errorf("chat: invalid role %d", uint8(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText parses a role's name.
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

func (r Role) valid() bool { return r >= System && r <= Assistant }

// Part is one piece of a message's content: text, or an image of the given
// size in pixels.
type Part struct {
	// Image marks an image part; otherwise the part is Text.
	Image bool
	// Text of a text part, rendered as is.
	Text string
	// Width and Height of an image part, in pixels of the original image.
	Width, Height int
}

// Text makes a text part.
func Text(s string) Part { return Part{Text: s} }

// Image makes an image part for an image of width x height pixels.
func Image(width, height int) Part { return Part{Image: true, Width: width, Height: height} }

// Message is one turn of a conversation.
type Message struct {
	Role  Role
	Parts []Part
}

// Kind says what a token is within the template.
type Kind uint8

// Token kinds.
const (
	KindHeader Kind = iota // <|im_start|> and "{role}\n"
	KindText               // message text
	KindImage              // <|vision_start|>, the <|image_pad|>s, <|vision_end|>
	KindEnd                // <|im_end|>
	KindSep                // the "\n" after <|im_end|>
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindHeader:
		return "header"
	case KindText:
		return "text"
	case KindImage:
		return "image"
	case KindEnd:
		return "end"
	case KindSep:
		return "sep"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// TokenInfo annotates one rendered token.
type TokenInfo struct {
	// Message is the index of the message in the conversation.
	Message int32
	// Part is the index of the content part the token belongs to, -1 for
	// template tokens. A text token that straddles two parts (or the header
	// and the first part) belongs to the part holding its last byte.
	Part int32
	Role Role
	Kind Kind
}

// Rendered is a token stream with one TokenInfo per id.
type Rendered struct {
	IDs  []int32
	Info []TokenInfo
}

// Len is the number of tokens.
func (r *Rendered) Len() int { return len(r.IDs) }

// Append adds o's tokens after r's.
func (r *Rendered) Append(o *Rendered) {
	r.IDs = append(r.IDs, o.IDs...)
	r.Info = append(r.Info, o.Info...)
}

// AssistantMask is 1 for the text tokens of assistant messages and 0
// elsewhere; with includeEnd, each assistant message's <|im_end|> is 1 too,
// so the policy learns to stop.
func (r *Rendered) AssistantMask(includeEnd bool) []uint8 {
	m := make([]uint8, len(r.Info))
	for i, in := range r.Info {
		if in.Role == Assistant && (in.Kind == KindText || (includeEnd && in.Kind == KindEnd)) {
			m[i] = 1
		}
	}
	return m
}

// Special token texts of the template.
const (
	ImStart     = "<|im_start|>"
	ImEnd       = "<|im_end|>"
	VisionStart = "<|vision_start|>"
	VisionEnd   = "<|vision_end|>"
	ImagePad    = "<|image_pad|>"
)

// Template renders conversations with one tokenizer and image setup. It is
// safe for concurrent use if its encoder is.
type Template struct {
	enc    tokenizer.Encoder
	offEnc tokenizer.OffsetEncoder // enc, when it can report offsets
	spec   ImageSpec

	imStart, imEnd, visionStart, visionEnd, imagePad int32
	newline                                          []int32
}

// New makes a template for enc, which must know the template's special
// tokens, and images sized by spec (zero fields take the defaults).
func New(enc tokenizer.Encoder, spec ImageSpec) (*Template, error) {
	if enc == nil {
		return nil, errors.New("chat: nil encoder")
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	t := &Template{enc: enc, spec: spec.withDefaults()}
	t.offEnc, _ = enc.(tokenizer.OffsetEncoder)
	for _, s := range []struct {
		tok string
		id  *int32
	}{{ImStart, &t.imStart}, {ImEnd, &t.imEnd}, {VisionStart, &t.visionStart}, {VisionEnd, &t.visionEnd}, {ImagePad, &t.imagePad}} {
		id, ok := enc.TokenID(s.tok)
		if !ok {
			return nil, fmt.Errorf("chat: the tokenizer has no %s token", s.tok)
		}
		*s.id = id
	}
	t.newline = enc.Encode("\n")
	if len(t.newline) == 0 {
		return nil, errors.New(`chat: the tokenizer encodes "\n" to nothing`)
	}
	return t, nil
}

// Spec is the template's image setup, defaults filled in.
func (t *Template) Spec() ImageSpec { return t.spec }

// Render renders a conversation.
func (t *Template) Render(msgs []Message) (*Rendered, error) {
	r := &Rendered{}
	for i, m := range msgs {
		if err := t.AppendMessage(r, i, m); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// RenderMessage renders one message, index being its position in the
// conversation. Concatenating RenderMessage over a conversation gives
// Render's result: messages are separated by special tokens, so turns can be
// appended incrementally.
func (t *Template) RenderMessage(index int, m Message) (*Rendered, error) {
	r := &Rendered{}
	if err := t.AppendMessage(r, index, m); err != nil {
		return nil, err
	}
	return r, nil
}

// AppendMessage renders message m (at position index) onto r. On error r
// is unchanged.
func (t *Template) AppendMessage(r *Rendered, index int, m Message) error {
	if !m.Role.valid() {
		return fmt.Errorf("chat: message %d: invalid role %d", index, uint8(m.Role))
	}
	n0 := len(r.IDs)
	if err := t.appendMessage(r, int32(index), m); err != nil {
		r.IDs, r.Info = r.IDs[:n0], r.Info[:n0]
		return fmt.Errorf("chat: message %d: %w", index, err)
	}
	return nil
}

// AppendGenerationPrompt appends "<|im_start|>assistant\n", the prompt the
// model continues from, as the header of message index.
func (t *Template) AppendGenerationPrompt(r *Rendered, index int) {
	info := TokenInfo{Message: int32(index), Part: -1, Role: Assistant, Kind: KindHeader}
	r.add(info, t.imStart)
	for _, id := range t.enc.Encode(Assistant.String() + "\n") {
		r.add(info, id)
	}
}

func (r *Rendered) add(info TokenInfo, ids ...int32) {
	for _, id := range ids {
		r.IDs = append(r.IDs, id)
		r.Info = append(r.Info, info)
	}
}

// textRun is text between two template special tokens: the pieces, and the
// part each came from (-1 for the header).
type textRun struct {
	text  strings.Builder
	ends  []int   // end offset of each piece in text
	parts []int32 // part index of each piece
}

func (tr *textRun) add(s string, part int32) {
	if s == "" {
		return
	}
	tr.text.WriteString(s)
	tr.ends = append(tr.ends, tr.text.Len())
	tr.parts = append(tr.parts, part)
}

func (t *Template) appendMessage(r *Rendered, msg int32, m Message) error {
	base := TokenInfo{Message: msg, Part: -1, Role: m.Role}
	hdr := base
	hdr.Kind = KindHeader
	r.add(hdr, t.imStart)

	run := &textRun{}
	run.add(m.Role.String()+"\n", -1)
	for pi, p := range m.Parts {
		if !p.Image {
			run.add(p.Text, int32(pi))
			continue
		}
		n, err := t.spec.Tokens(p.Width, p.Height)
		if err != nil {
			return fmt.Errorf("part %d: %w", pi, err)
		}
		t.flush(r, base, run)
		run = &textRun{}
		img := base
		img.Part, img.Kind = int32(pi), KindImage
		r.add(img, t.visionStart)
		for k := 0; k < n; k++ {
			r.add(img, t.imagePad)
		}
		r.add(img, t.visionEnd)
	}
	t.flush(r, base, run)

	end := base
	end.Kind = KindEnd
	r.add(end, t.imEnd)
	end.Kind = KindSep
	r.add(end, t.newline...)
	return nil
}

// flush encodes a text run and annotates its tokens.
func (t *Template) flush(r *Rendered, base TokenInfo, run *textRun) {
	if len(run.ends) == 0 {
		return
	}
	info := func(part int32) TokenInfo {
		in := base
		in.Part = part
		in.Kind = KindText
		if part < 0 {
			in.Kind = KindHeader
		}
		return in
	}
	if t.offEnc == nil {
		// No offsets: encode piece by piece.
		text, start := run.text.String(), 0
		for k, end := range run.ends {
			for _, id := range t.enc.Encode(text[start:end]) {
				r.add(info(run.parts[k]), id)
			}
			start = end
		}
		return
	}
	ids, spans := t.offEnc.EncodeOffsets(run.text.String())
	k := 0
	for i, id := range ids {
		last := spans[i].End - 1 // the token's last byte decides its part
		for k < len(run.ends)-1 && last >= run.ends[k] {
			k++
		}
		r.add(info(run.parts[k]), id)
	}
}

// Text renders a conversation as the template's text, images expanded to
// their pad tokens; encoding it gives Render's ids. For logs and checks.
func (t *Template) Text(msgs []Message) (string, error) {
	var b strings.Builder
	for i, m := range msgs {
		if !m.Role.valid() {
			return "", fmt.Errorf("chat: message %d: invalid role %d", i, uint8(m.Role))
		}
		b.WriteString(ImStart + m.Role.String() + "\n")
		for pi, p := range m.Parts {
			if !p.Image {
				b.WriteString(p.Text)
				continue
			}
			n, err := t.spec.Tokens(p.Width, p.Height)
			if err != nil {
				return "", fmt.Errorf("chat: message %d: part %d: %w", i, pi, err)
			}
			b.WriteString(VisionStart + strings.Repeat(ImagePad, n) + VisionEnd)
		}
		b.WriteString(ImEnd + "\n")
	}
	return b.String(), nil
}
