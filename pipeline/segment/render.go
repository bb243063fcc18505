package segment

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer/featurize"
)

// Error is a problem with one trajectory's data; it names the trajectory,
// the step (when there is one) and the field.
type Error struct {
	TrajectoryID string
	Step         int32 // -1 when the problem is not a step's
	Field        string
	Err          error
}

// Error says which trajectory, step and field, and what is wrong.
func (e *Error) Error() string {
	if e.Step < 0 {
		return fmt.Sprintf("trajectory %q: %s: %v", e.TrajectoryID, e.Field, e.Err)
	}
	return fmt.Sprintf("trajectory %q step %d: %s: %v", e.TrajectoryID, e.Step, e.Field, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Input is one trajectory to render: its row, its steps rows sorted by
// (step, sub), its task's instruction and the size of a step's screenshot
// (ignored by a fixed image token count).
type Input struct {
	Trajectory  *schemas.Trajectory
	Steps       []schemas.Step
	Instruction string
	ImageSize   func(*schemas.Step) (width, height int, err error)
	// Tree returns a step's accessibility tree; the pointer view calls it
	// for the turns that have no recorded prompt ids or no response ids.
	Tree func(*schemas.Step) ([]byte, error)
}

// Builder renders trajectories into pieces with the chat template
// (pipeline/chat):
//
//	system: the system prompt; user: the instruction
//	per turn: user: the screenshot; assistant: the response
//
// A turn reduced to its summary is an assistant message with its compact
// actions (its user message and screenshot are gone). Every message starts
// with <|im_start|>, a boundary, so pieces concatenate to the tokens of
// their joined text. In a live stream, a turn's observation is its user
// message and the generation prompt ("<|im_start|>assistant\n"), after the
// template's closing of the previous response (<|im_end|>\n, or \n when the
// rollout's ids already end with <|im_end|>). A Builder caches rendered
// observations per screenshot size and is not safe for concurrent use; use
// one per worker.
type Builder struct {
	c      *Codec
	tpl    *chat.Template
	system string
	view   View
	// closing ends an assistant message (<|im_end|> and the separator),
	// sep is the separator alone, gen the generation prompt.
	closing, sep, gen []int32
	sepText, genTail  string
	obs               map[[2]int]*observation
}

// observation is one screenshot size's rendered user message.
type observation struct {
	msg                []int32 // the user message with the screenshot
	tokens             int     // its pad tokens
	fresh, live, liveC Piece   // after closed context; after an open / a closed response
}

// NewBuilder returns a builder rendering with tpl and system as the system
// prompt ("" for none).
func NewBuilder(c *Codec, tpl *chat.Template, system string) (*Builder, error) {
	b := &Builder{c: c, tpl: tpl, system: system, obs: map[[2]int]*observation{}}
	r, err := tpl.RenderMessage(0, chat.Message{Role: chat.Assistant, Parts: []chat.Part{chat.Text("x")}})
	if err != nil {
		return nil, err
	}
	for i, in := range r.Info {
		switch in.Kind {
		case chat.KindEnd:
			b.closing = append(b.closing, r.IDs[i])
		case chat.KindSep:
			b.closing = append(b.closing, r.IDs[i])
			b.sep = append(b.sep, r.IDs[i])
		}
	}
	if len(b.closing) == 0 || b.closing[0] != c.ImEnd || len(b.sep) == 0 {
		return nil, fmt.Errorf("chat template does not close messages with %s and a separator", imEnd)
	}
	b.sepText = c.Enc.Decode(b.sep)
	var g chat.Rendered
	tpl.AppendGenerationPrompt(&g, 0)
	b.gen = g.IDs
	b.genTail = c.Enc.Decode(g.IDs[1:]) // after <|im_start|>: "assistant\n"
	return b, nil
}

// WithView sets the view the builder renders (ViewPlain by default) and
// returns the builder.
func (b *Builder) WithView(v View) *Builder {
	b.view = v
	return b
}

// View returns the builder's view.
func (b *Builder) View() View {
	if b.view == "" {
		return ViewPlain
	}
	return b.view
}

// ObservationIDs renders a turn's observation as the user message the
// context holds: the screenshot (w x h pixels; ignored with a fixed token
// count) followed by text ("" for none). These are the ids a rollout
// records as steps.prompt_ids.
func (b *Builder) ObservationIDs(w, h int, text string) ([]int32, error) {
	if b.tpl.Spec().FixedTokens > 0 {
		w, h = 0, 0
	}
	parts := []chat.Part{chat.Image(w, h)}
	if text != "" {
		parts = append(parts, chat.Text(text))
	}
	r, err := b.tpl.RenderMessage(0, chat.Message{Role: chat.User, Parts: parts})
	if err != nil {
		return nil, err
	}
	return r.IDs, nil
}

// messageObservation makes an observation from a user message's ids, which
// must hold one screenshot of pads image tokens (pads < 0: any number).
func (b *Builder) messageObservation(msg []int32, pads int) (*observation, error) {
	c := b.c
	if len(msg) < 2+len(b.closing) || msg[0] != c.ImStart || !slices.Equal(msg[len(msg)-len(b.closing):], b.closing) {
		return nil, fmt.Errorf("%d ids are not one message (%s ... %s and its separator)", len(msg), imStart, imEnd)
	}
	vs, ve, n := -1, -1, 0
	for k, id := range msg {
		switch {
		case id < 0 || int(id) >= c.Enc.VocabSize():
			return nil, fmt.Errorf("id %d at %d is outside the tokenizer's vocabulary of %d ids (wrong tokenizer?)", id, k, c.Enc.VocabSize())
		case id == c.VisionStart:
			if vs >= 0 {
				return nil, fmt.Errorf("a second screenshot at %d; an observation holds one", k)
			}
			vs = k
		case id == c.VisionEnd:
			if vs < 0 || ve >= 0 {
				return nil, fmt.Errorf("%s at %d without its %s", visionEnd, k, visionStart)
			}
			ve = k
		case id == c.ImagePad:
			if vs < 0 || ve >= 0 {
				return nil, fmt.Errorf("%s at %d outside the screenshot", imagePad, k)
			}
			n++
		case id == c.ImStart && k > 0, id == c.ImEnd && k != len(msg)-len(b.closing):
			return nil, fmt.Errorf("message boundary at %d inside the observation", k)
		}
	}
	if vs < 0 || ve < 0 {
		return nil, errors.New("no screenshot (vision tokens) in the observation")
	}
	if pads >= 0 && n != pads {
		return nil, fmt.Errorf("the screenshot has %d image tokens, the image spec gives %d", n, pads)
	}
	o := &observation{msg: msg, tokens: n}
	o.fresh = messagePiece("", 0, b.genTail, 1, o.tokens, o.msg, b.gen)
	o.live = messagePiece("", 0, b.genTail, 1, o.tokens, b.closing, o.msg, b.gen)
	o.liveC = messagePiece(b.sepText, len(b.sep), b.genTail, 1, o.tokens, b.sep, o.msg, b.gen)
	return o, nil
}

func (b *Builder) observation(w, h int) (*observation, error) {
	if b.tpl.Spec().FixedTokens > 0 {
		w, h = 0, 0 // every screenshot renders alike
	}
	key := [2]int{w, h}
	if o, ok := b.obs[key]; ok {
		return o, nil
	}
	r, err := b.tpl.RenderMessage(0, chat.Message{Role: chat.User, Parts: []chat.Part{chat.Image(w, h)}})
	if err != nil {
		return nil, err
	}
	o := &observation{msg: r.IDs}
	for _, in := range r.Info {
		if in.Kind == chat.KindImage {
			o.tokens++
		}
	}
	o.tokens -= 2 // <|vision_start|> and <|vision_end|>
	o.fresh = messagePiece("", 0, b.genTail, 1, o.tokens, o.msg, b.gen)
	o.live = messagePiece("", 0, b.genTail, 1, o.tokens, b.closing, o.msg, b.gen)
	o.liveC = messagePiece(b.sepText, len(b.sep), b.genTail, 1, o.tokens, b.sep, o.msg, b.gen)
	b.obs[key] = o
	return o, nil
}

// message renders one message as a piece.
func (b *Builder) message(role chat.Role, text string) (Piece, error) {
	r, err := b.tpl.RenderMessage(0, chat.Message{Role: role, Parts: []chat.Part{chat.Text(text)}})
	if err != nil {
		return Piece{}, err
	}
	return messagePiece("", 0, b.sepText, 0, 0, r.IDs), nil
}

// Prefix renders the system prompt and the instruction.
func (b *Builder) Prefix(instruction string) (Piece, error) {
	var msgs []chat.Message
	if b.system != "" {
		msgs = append(msgs, chat.Message{Role: chat.System, Parts: []chat.Part{chat.Text(b.system)}})
	}
	msgs = append(msgs, chat.Message{Role: chat.User, Parts: []chat.Part{chat.Text(b.view.InstructionText(instruction))}})
	r, err := b.tpl.Render(msgs)
	if err != nil {
		return Piece{}, err
	}
	return messagePiece("", 0, b.sepText, 0, 0, r.IDs), nil
}

type turnRows struct {
	rows []schemas.Step // first row: the response and screenshot; all: actions
	text string         // the response's text (without the closing <|im_end|>)
	obs  *observation
}

// Prepare checks one trajectory and renders it. Its errors are *Error.
func (b *Builder) Prepare(in Input) (*Prepared, error) {
	tid := in.Trajectory.TrajectoryID
	vocab := b.c.Enc.VocabSize()
	var turns []turnRows
	for i := range in.Steps {
		st := &in.Steps[i]
		if i > 0 {
			prev := &in.Steps[i-1]
			if st.Step < prev.Step || (st.Step == prev.Step && st.Sub <= prev.Sub) {
				return nil, &Error{tid, st.Step, "step", fmt.Errorf("steps out of order or repeated: (step %d, sub %d) after (step %d, sub %d)",
					st.Step, st.Sub, prev.Step, prev.Sub)}
			}
		}
		if len(turns) > 0 && turns[len(turns)-1].rows[0].Step == st.Step {
			first := &turns[len(turns)-1].rows[0]
			if len(st.ResponseIDs) > 0 && !slices.Equal(st.ResponseIDs, first.ResponseIDs) {
				return nil, &Error{tid, st.Step, "response_ids", fmt.Errorf("sub %d records response ids of its own; one response per turn is expected", st.Sub)}
			}
			turns[len(turns)-1].rows = append(turns[len(turns)-1].rows, *st)
			continue
		}
		if len(st.Logprobs) != 0 && len(st.Logprobs) != len(st.ResponseIDs) {
			return nil, &Error{tid, st.Step, "logprobs", fmt.Errorf("%d log-probabilities recorded for %d response ids", len(st.Logprobs), len(st.ResponseIDs))}
		}
		for k, id := range st.ResponseIDs {
			if id < 0 || int(id) >= vocab {
				return nil, &Error{tid, st.Step, "response_ids", fmt.Errorf("id %d at %d is outside the tokenizer's vocabulary of %d ids (wrong tokenizer?)", id, k, vocab)}
			}
		}
		for k, lp := range st.Logprobs {
			if math.IsNaN(float64(lp)) || math.IsInf(float64(lp), 0) || lp > 0 {
				return nil, &Error{tid, st.Step, "logprobs", fmt.Errorf("log-probability %v at %d, want finite and <= 0", lp, k)}
			}
		}
		turns = append(turns, turnRows{rows: []schemas.Step{*st}})
	}
	prefix, err := b.Prefix(in.Instruction)
	if err != nil {
		return nil, &Error{tid, -1, "instruction", err}
	}
	p := &Prepared{Prefix: prefix, Turns: make([]Turn, len(turns))}
	prevClosed := false
	for i := range turns {
		st := &turns[i].rows[0]
		w, h, err := 0, 0, error(nil)
		if b.tpl.Spec().FixedTokens == 0 {
			w, h, err = in.ImageSize(st)
		}
		var elems []featurize.Element
		field := "observation"
		switch {
		case err != nil:
		case len(st.PromptIDs) > 0:
			// the policy's own view of the turn, never re-rendered
			field = "prompt_ids"
			pads := b.tpl.Spec().FixedTokens
			if pads == 0 {
				pads, err = b.tpl.Spec().Tokens(w, h)
			}
			if err == nil {
				turns[i].obs, err = b.messageObservation(st.PromptIDs, pads)
			}
		case b.view.pointer():
			field = "a11y"
			var text string
			if text, elems, err = b.screen(in, st); err == nil {
				var msg []int32
				if msg, err = b.ObservationIDs(w, h, text); err == nil {
					turns[i].obs, err = b.messageObservation(msg, -1)
				}
			}
		default:
			turns[i].obs, err = b.observation(w, h)
		}
		if err != nil {
			return nil, &Error{tid, st.Step, field, err}
		}
		t := &p.Turns[i]
		t.Step = st.Step
		t.Image = st.Observation
		t.Fresh = turns[i].obs.fresh
		if i > 0 {
			t.Live = turns[i].obs.live
			if prevClosed {
				t.Live = turns[i].obs.liveC
			}
		}
		if len(st.ResponseIDs) > 0 {
			t.Resp = st.ResponseIDs
			if len(st.Logprobs) > 0 {
				t.Logp = st.Logprobs
			}
		} else {
			// Imported logs and scripted policies: the response text, closed
			// by <|im_end|>, which the policy has to learn to emit like any
			// response token; in the pointer view, the actions in the
			// pointer language.
			turns[i].text = responseText(st)
			if b.view.pointer() {
				if elems == nil {
					if _, elems, err = b.screen(in, st); err != nil {
						return nil, &Error{tid, st.Step, "a11y", err}
					}
				}
				turns[i].text = pointerResponse(turns[i].rows, elems, in.Instruction)
			}
			t.Resp = append(b.c.Encode(turns[i].text), b.c.ImEnd)
		}
		prevClosed = t.Resp[len(t.Resp)-1] == b.c.ImEnd
	}
	p.Fill = func(i int, t *Turn) error {
		text := turns[i].text
		if len(turns[i].rows[0].ResponseIDs) > 0 {
			ids := t.Resp
			if ids[len(ids)-1] == b.c.ImEnd {
				ids = ids[:len(ids)-1] // the template closes the message
			}
			text = b.c.Enc.Decode(ids)
		}
		asst, err := b.message(chat.Assistant, text)
		if err != nil {
			return &Error{tid, t.Step, "response", err}
		}
		o := turns[i].obs
		t.Ctx = Concat(messagePiece("", 0, b.sepText, 1, o.tokens, o.msg), asst)
		if t.Summary, err = b.message(chat.Assistant, ActionSummary(turns[i].rows)); err != nil {
			return &Error{tid, t.Step, "action", err}
		}
		return nil
	}
	return p, nil
}

// screen renders a step's screen text from its accessibility tree.
func (b *Builder) screen(in Input, st *schemas.Step) (string, []featurize.Element, error) {
	if in.Tree == nil {
		return "", nil, errors.New("the pointer view needs the accessibility tree, and none is available")
	}
	if st.A11y == "" {
		return "", nil, errors.New("no accessibility tree recorded (the pointer view needs one)")
	}
	tree, err := in.Tree(st)
	if err != nil {
		return "", nil, err
	}
	return ScreenText(st.Step, tree, in.Instruction)
}

func responseText(st *schemas.Step) string {
	if st.Response != "" {
		return st.Response
	}
	return st.RawAction
}

// maxSummaryAction bounds one action's text in a summary.
const maxSummaryAction = 200

// ActionSummary is a turn's compact action history: each action of the turn in
// the policy's compact text form ("click 512 300"), one per line; actions
// without one fall back to the raw action's first line.
func ActionSummary(rows []schemas.Step) string {
	lines := make([]string, 0, len(rows))
	for i := range rows {
		s, err := action.Format(rows[i].ActionOf())
		if err != nil {
			s, _, _ = strings.Cut(strings.TrimSpace(rows[i].RawAction), "\n")
			if s == "" {
				s = rows[i].ActionKind
			}
		}
		if len(s) > maxSummaryAction {
			cut := maxSummaryAction
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			s = s[:cut] + "..."
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}
