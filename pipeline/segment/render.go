package segment

import (
	"fmt"
	"math"
	"slices"
	"strings"

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

func (e *Error) Error() string {
	if e.Step < 0 {
		return fmt.Sprintf("trajectory %q: %s: %v", e.TrajectoryID, e.Field, e.Err)
	}
	return fmt.Sprintf("trajectory %q step %d: %s: %v", e.TrajectoryID, e.Step, e.Field, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Input is one trajectory to render: its row, its steps rows sorted by
// (step, sub), its task's instruction and the screenshot token count of a
// step.
type Input struct {
	Trajectory  *schemas.Trajectory
	Steps       []schemas.Step
	Instruction string
	ImageTokens func(*schemas.Step) (int, error)
}

// Builder renders trajectories into pieces with the Qwen chat template:
//
//	<|im_start|>system\n{system}<|im_end|>\n
//	<|im_start|>user\n{instruction}<|im_end|>\n
//	per turn: <|im_start|>user\n<|vision_start|>{pads}<|vision_end|><|im_end|>\n
//	          <|im_start|>assistant\n{response}<|im_end|>\n
//
// A turn reduced to its summary is <|im_start|>assistant\n{actions}<|im_end|>\n
// (its user message and screenshot are gone). Every piece starts with
// <|im_start|> or follows a boundary token, so pieces concatenate to the
// tokens of their joined text. A Builder is not safe for concurrent use
// (it caches image ids); use one per worker.
type Builder struct {
	c      *Codec
	system string
	// Template glue, tokenized once.
	userOpen, afterOpen, afterClosedOpen, obsClose Piece
	images                                         map[int][]int32
}

// NewBuilder returns a builder rendering with system as the system prompt
// ("" for none).
func NewBuilder(c *Codec, system string) *Builder {
	return &Builder{c: c, system: system,
		userOpen:        c.TextPiece(ImStart + "user\n"),
		afterOpen:       c.TextPiece(ImEnd + "\n" + ImStart + "user\n"),
		afterClosedOpen: c.TextPiece("\n" + ImStart + "user\n"),
		obsClose:        c.TextPiece(ImEnd + "\n" + ImStart + "assistant\n"),
		images:          map[int][]int32{},
	}
}

func (b *Builder) image(n int) Piece {
	ids, ok := b.images[n]
	if !ok {
		ids = b.c.ImageIDs(n)
		b.images[n] = ids
	}
	return ImagePiece(ids, n)
}

// PrefixText is the system prompt and instruction as rendered text.
func (b *Builder) PrefixText(instruction string) string {
	var sb strings.Builder
	if b.system != "" {
		sb.WriteString(ImStart + "system\n" + b.system + ImEnd + "\n")
	}
	sb.WriteString(ImStart + "user\n" + instruction + ImEnd + "\n")
	return sb.String()
}

type turnRows struct {
	rows []schemas.Step // first row: the response and screenshot; all: actions
	text string         // the response's text in the history
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
	p := &Prepared{Prefix: b.c.TextPiece(b.PrefixText(in.Instruction)), Turns: make([]Turn, len(turns))}
	prevClosed := false
	for i := range turns {
		st := &turns[i].rows[0]
		n, err := in.ImageTokens(st)
		if err != nil {
			return nil, &Error{tid, st.Step, "observation", err}
		}
		img := b.image(n)
		t := &p.Turns[i]
		t.Step = st.Step
		t.Fresh = Concat(b.userOpen, img, b.obsClose)
		if i > 0 {
			open := b.afterOpen
			if prevClosed {
				open = b.afterClosedOpen
			}
			t.Live = Concat(open, img, b.obsClose)
		}
		if len(st.ResponseIDs) > 0 {
			t.Resp = st.ResponseIDs
			if len(st.Logprobs) > 0 {
				t.Logp = st.Logprobs
			}
			turns[i].text = "" // decoded on demand, in Fill
		} else {
			// Imported logs: the response text, closed by <|im_end|>, which
			// the policy has to learn to emit like any response token.
			text := responseText(st)
			t.Resp = append(b.c.Encode(text), b.c.ImEnd)
			turns[i].text = text + ImEnd
		}
		prevClosed = t.Resp[len(t.Resp)-1] == b.c.ImEnd
	}
	p.Fill = func(i int, t *Turn) {
		text := turns[i].text
		if text == "" {
			text = b.c.Enc.Decode(t.Resp)
		}
		closing := ImEnd + "\n"
		if t.Resp[len(t.Resp)-1] == b.c.ImEnd {
			closing = "\n"
		}
		t.Ctx = Concat(b.userOpen, b.image(t.Fresh.ImageTokens), b.c.TextPiece(ImEnd+"\n"+ImStart+"assistant\n"+text+closing))
		t.Summary = b.c.TextPiece(ImStart + "assistant\n" + ActionSummary(turns[i].rows) + ImEnd + "\n")
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
			s = s[:maxSummaryAction] + "..."
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}
