package segment

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
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
	msgs = append(msgs, chat.Message{Role: chat.User, Parts: []chat.Part{chat.Text(instruction)}})
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
		if err == nil {
			turns[i].obs, err = b.observation(w, h)
		}
		if err != nil {
			return nil, &Error{tid, st.Step, "observation", err}
		}
		t := &p.Turns[i]
		t.Step = st.Step
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
			// Imported logs: the response text, closed by <|im_end|>, which
			// the policy has to learn to emit like any response token.
			turns[i].text = responseText(st)
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
