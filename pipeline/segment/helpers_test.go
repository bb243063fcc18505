package segment

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
)

// fakeEncoder is a small tokenizer for property tests: added tokens are
// split out first (like the real one), other text is matched greedily
// against a few multi-byte words, else byte by byte. Greedy matching is not
// prefix-stable ("foo" + "bar" becomes "foobar"), which is what the
// boundary tests need.
type fakeEncoder struct {
	specials []string
	words    []string // sorted longest first
	byFirst  [256][]string
	vocab    map[string]int32
	tokens   []string
}

const fakeByteBase = 16

func newFakeEncoder() *fakeEncoder {
	f := &fakeEncoder{specials: []string{imStart, imEnd, visionStart, visionEnd, imagePad, "<|endoftext|>"},
		vocab: map[string]int32{}}
	f.tokens = make([]string, fakeByteBase+256)
	for i, s := range f.specials {
		f.tokens[i] = s
		f.vocab[s] = int32(i)
	}
	for b := 0; b < 256; b++ {
		f.tokens[fakeByteBase+b] = string([]byte{byte(b)})
		f.vocab[string([]byte{byte(b)})] = int32(fakeByteBase + b)
	}
	for _, w := range []string{"click", "clicking", "ing", "the", " the", "ab", "abc", "bc", "foo", "bar", "foobar",
		"\n\n", "assistant", "user", "system", " button", "type", "hello", "wor", "world", "ld", " to", "save", "é"} {
		f.vocab[w] = int32(len(f.tokens))
		f.tokens = append(f.tokens, w)
		f.words = append(f.words, w)
	}
	slices.SortStableFunc(f.words, func(a, b string) int { return len(b) - len(a) })
	for _, w := range f.words {
		f.byFirst[w[0]] = append(f.byFirst[w[0]], w)
	}
	return f
}

func (f *fakeEncoder) Encode(text string) []int32 {
	ids, _ := f.EncodeOffsets(text)
	return ids
}

// EncodeOffsets makes the fake an OffsetEncoder, so the chat template
// encodes a message's header and text together, as it does with Qwen.
func (f *fakeEncoder) EncodeOffsets(text string) ([]int32, []tokenizer.Span) {
	out := make([]int32, 0, len(text)/2)
	spans := make([]tokenizer.Span, 0, len(text)/2)
	for pos := 0; pos < len(text); {
		n, id := 1, int32(-1)
		if text[pos] == '<' {
			for i, sp := range f.specials {
				if strings.HasPrefix(text[pos:], sp) {
					n, id = len(sp), int32(i)
					break
				}
			}
		}
		if id < 0 {
			for _, w := range f.byFirst[text[pos]] {
				if strings.HasPrefix(text[pos:], w) {
					n = len(w)
					break
				}
			}
			id = f.vocab[text[pos:pos+n]]
		}
		out = append(out, id)
		spans = append(spans, tokenizer.Span{Start: pos, End: pos + n})
		pos += n
	}
	return out, spans
}

func (f *fakeEncoder) Decode(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 0 && int(id) < len(f.tokens) {
			b.WriteString(f.tokens[id])
		}
	}
	return b.String()
}

func (f *fakeEncoder) TokenID(tok string) (int32, bool) {
	id, ok := f.vocab[tok]
	return id, ok
}

func (f *fakeEncoder) VocabSize() int { return len(f.tokens) }

var _ tokenizer.OffsetEncoder = (*fakeEncoder)(nil)

// qwen returns the real tokenizer, or skips.
func qwen(t testing.TB) tokenizer.Encoder {
	t.Helper()
	tk, err := tokenizer.Default()
	if err != nil {
		t.Skipf("Qwen tokenizer not installed (scripts/fetch-tokenizer.sh): %v", err)
	}
	return tk
}

func mustCodec(t testing.TB, enc tokenizer.Encoder) *Codec {
	t.Helper()
	c, err := NewCodec(enc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var wordsForText = []string{"I", "will", "click", "the", "Save", "button", "to", "store", "foo", "bar", "ing", "abc",
	"hello", "world", "é", "日本", "42", "<action>", "</action>", "type", ",", ".", "!", "\n", "  ", "\t"}

func randText(r *rand.Rand, maxWords int) string {
	n := r.IntN(maxWords + 1)
	var b strings.Builder
	for i := 0; i < n; i++ {
		w := wordsForText[r.IntN(len(wordsForText))]
		if i > 0 && r.IntN(3) > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

var actionKinds = []string{"click", "type", "hotkey", "scroll", "key", "done", "unknown", "drag"}

func randAction(r *rand.Rand, st *schemas.Step) {
	x, y := int32(r.IntN(1001)), int32(r.IntN(1001))
	switch k := actionKinds[r.IntN(len(actionKinds))]; k {
	case "click":
		st.ActionKind, st.X, st.Y = k, &x, &y
	case "drag":
		x2, y2 := int32(r.IntN(1001)), int32(r.IntN(1001))
		st.ActionKind, st.X, st.Y, st.X2, st.Y2 = k, &x, &y, &x2, &y2
	case "type":
		st.ActionKind, st.Text = k, randText(r, 3)+"x"
	case "hotkey":
		st.ActionKind, st.Keys = k, []string{"ctrl", "s"}
	case "key":
		st.ActionKind, st.Keys = k, []string{"enter"}
	case "scroll":
		st.ActionKind, st.Direction, st.Amount = k, "down", int32(1+r.IntN(5))
	default:
		st.ActionKind = k
		st.RawAction = "pyautogui.moveTo(" + fmt.Sprint(x) + ", " + fmt.Sprint(y) + ")\nmore"
	}
}

// randTrajectory builds a random trajectory: T turns, some with recorded
// ids (canonical or not, with or without <|im_end|> and logprobs), some
// text-only, some with extra sub-actions.
type trajOpts struct {
	maxTurns   int
	canonical  bool // response ids are Tokenize(text) and texts never start with whitespace
	textOnly   bool // no recorded ids at all
	imageNames int  // distinct observations
}

func randTrajectory(r *rand.Rand, enc tokenizer.Encoder, id string, o trajOpts) (schemas.Trajectory, []schemas.Step) {
	tr := schemas.Trajectory{TrajectoryID: id, TaskID: "task-" + id[len(id)-1:], GroupID: "g" + id[len(id)-1:],
		Outcome: "success", Reward: float64(r.IntN(2)), PolicyVersion: int32(r.IntN(4))}
	T := r.IntN(o.maxTurns + 1)
	var steps []schemas.Step
	for t := 0; t < T; t++ {
		st := schemas.Step{TrajectoryID: id, Step: int32(t), Observation: fmt.Sprintf("obs-%d", r.IntN(max(o.imageNames, 1)))}
		randAction(r, &st)
		text := randText(r, 12)
		if o.canonical {
			text = "Thought: " + strings.TrimLeft(text, " \n\t")
		}
		st.Response = text
		if !o.textOnly && r.IntN(5) > 0 {
			ids := enc.Encode(text)
			if !o.canonical && len(ids) > 0 && r.IntN(3) == 0 {
				// A non-canonical sampling: split one token's text in bytes.
				k := r.IntN(len(ids))
				piece := enc.Decode(ids[k : k+1])
				var split []int32
				for _, b := range []byte(piece) {
					if id, ok := enc.TokenID(string([]byte{b})); ok {
						split = append(split, id)
					}
				}
				if len(split) > 0 {
					ids = slices.Concat(ids[:k], split, ids[k+1:])
				}
			}
			if r.IntN(2) == 0 {
				ids = append(ids, mustID(enc, imEnd))
			}
			if len(ids) == 0 {
				ids = []int32{mustID(enc, imEnd)}
			}
			st.ResponseIDs = ids
			if r.IntN(4) > 0 {
				st.Logprobs = make([]float32, len(ids))
				for i := range st.Logprobs {
					st.Logprobs[i] = -float32(r.IntN(1000)) / 97
				}
			}
		}
		steps = append(steps, st)
		if r.IntN(6) == 0 { // a second action from the same response
			sub := st
			sub.Sub = 1
			randAction(r, &sub)
			steps = append(steps, sub)
		}
	}
	tr.Steps = int32(T)
	return tr, steps
}

func mustID(enc tokenizer.Encoder, tok string) int32 {
	id, ok := enc.TokenID(tok)
	if !ok {
		panic("no token " + tok)
	}
	return id
}

// testSizes are small screenshots: 4, 6, 8 and 9 pad tokens under the
// default image spec.
var testSizes = [][2]int{{64, 64}, {96, 64}, {128, 64}, {96, 96}}

// imageSizeOf maps observation names to small screenshot sizes.
func imageSizeOf(st *schemas.Step) (int, int, error) {
	var k int
	fmt.Sscanf(st.Observation, "obs-%d", &k)
	s := testSizes[k%len(testSizes)]
	return s[0], s[1], nil
}

func imageTokensOf(st *schemas.Step) int {
	w, h, _ := imageSizeOf(st)
	n, err := chat.DefaultImageSpec().Tokens(w, h)
	if err != nil {
		panic(err)
	}
	return n
}

func imageText(n int) string {
	return visionStart + strings.Repeat(imagePad, n) + visionEnd
}

// responseTokens is the spec of a turn's trained tokens: the recorded ids,
// else Tokenize(response text) + <|im_end|>.
func responseTokens(enc tokenizer.Encoder, st *schemas.Step) ([]int32, []float32) {
	if len(st.ResponseIDs) > 0 {
		return st.ResponseIDs, st.Logprobs
	}
	text := st.Response
	if text == "" {
		text = st.RawAction
	}
	return append(enc.Encode(text), mustID(enc, imEnd)), nil
}

// firstRows returns the first row of each turn.
func firstRows(steps []schemas.Step) []schemas.Step {
	var out []schemas.Step
	for i := range steps {
		if i == 0 || steps[i].Step != steps[i-1].Step {
			out = append(out, steps[i])
		}
	}
	return out
}

func turnRowsOf(steps []schemas.Step) [][]schemas.Step {
	var out [][]schemas.Step
	for i := range steps {
		if i == 0 || steps[i].Step != steps[i-1].Step {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], steps[i])
	}
	return out
}

// literal is Algorithm 2 (and the other modes) written the slow, obvious
// way on text: the history H is a string, every token diff re-tokenizes
// all of H, every pruning re-tokenizes the retained history. The fast
// implementation must give exactly the same streams.
func literal(enc tokenizer.Encoder, system, instruction string, steps []schemas.Step, prm Params) []Item {
	turns := turnRowsOf(steps)
	T := len(turns)
	if T == 0 {
		return nil
	}
	imEndID := mustID(enc, imEnd)
	prefix := ""
	if system != "" {
		prefix = imStart + "system\n" + system + imEnd + "\n"
	}
	prefix += imStart + "user\n" + instruction + imEnd + "\n"
	resp := make([][]int32, T)
	logp := make([][]float32, T)
	text := make([]string, T)
	for i, rows := range turns {
		resp[i], logp[i] = responseTokens(enc, &rows[0])
		text[i] = enc.Decode(resp[i])
		if len(rows[0].ResponseIDs) == 0 {
			t := rows[0].Response
			if t == "" {
				t = rows[0].RawAction
			}
			text[i] = t + imEnd
		}
	}
	closing := func(i int) string {
		if resp[i][len(resp[i])-1] == imEndID {
			return "\n"
		}
		return imEnd + "\n"
	}
	fresh := func(i int) string {
		n := imageTokensOf(&turns[i][0])
		return imStart + "user\n" + imageText(n) + imEnd + "\n" + imStart + "assistant\n"
	}
	ctx := func(i int) string { return fresh(i) + text[i] + closing(i) }
	summary := func(i int) string { return imStart + "assistant\n" + ActionSummary(turns[i]) + imEnd + "\n" }

	var items []Item
	var ids []int32
	var mask []int8
	var lp []float32
	ctxOnly := func(tok []int32) {
		ids = append(ids, tok...)
		mask = append(mask, make([]int8, len(tok))...)
		lp = append(lp, make([]float32, len(tok))...)
	}
	train := func(i int) {
		ids = append(ids, resp[i]...)
		for range resp[i] {
			mask = append(mask, 1)
		}
		if logp[i] != nil {
			lp = append(lp, logp[i]...)
		} else {
			lp = append(lp, make([]float32, len(resp[i]))...)
		}
	}
	emit := func(first, last int) {
		it := Item{IDs: ids, Mask: mask, Logp: lp, First: first, Last: last, HasLogprobs: true}
		for i := first; i <= last; i++ {
			if logp[i] == nil {
				it.HasLogprobs = false
			}
		}
		items = append(items, it)
		ids, mask, lp = nil, nil, nil
	}
	if prm.Mode == ModeStep {
		for t := 0; t < T; t++ {
			lo := max(0, t-prm.Window)
			H := prefix
			for i := 0; i < t; i++ {
				if i < lo {
					H += summary(i)
				} else {
					H += ctx(i)
				}
			}
			ctxOnly(enc.Encode(H + fresh(t)))
			train(t)
			emit(t, t)
		}
		return items
	}
	limit := prm.K + prm.Delta
	if prm.Mode == ModeTrajectory {
		limit = 1 << 30
	}
	H := prefix + fresh(0)
	ctxOnly(enc.Encode(H))
	n, first, start := 1, 0, 0
	for t := 0; t < T; t++ {
		train(t)
		H += text[t]
		if t == T-1 {
			break
		}
		o := closing(t) + fresh(t+1)
		if n+1 > limit {
			emit(start, t)
			first += prm.Delta
			n = n + 1 - prm.Delta
			start = t + 1
			H = prefix
			for i := 0; i < first; i++ {
				H += summary(i)
			}
			for i := first; i <= t; i++ {
				H += ctx(i)
			}
			H += fresh(t + 1)
			ctxOnly(enc.Encode(H))
			continue
		}
		l := len(enc.Encode(H))
		all := enc.Encode(H + o)
		if l < len(all) {
			ctxOnly(all[l:])
		}
		H += o
		n++
	}
	emit(start, T-1)
	return items
}
