package chat

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/tokenizer"
)

// Expected values were checked by hand for the first rows and against
// qwen-vl-utils' smart_resize (Python) for all.
func TestImageTokens(t *testing.T) {
	qwen25 := ImageSpec{PatchSize: 14, MergeSize: 2} // min/max from token counts: 4*28*28, 16384*28*28
	qwen2hf := ImageSpec{PatchSize: 14, MergeSize: 2, MinPixels: 56 * 56, MaxPixels: 28 * 28 * 1280}
	for _, tc := range []struct {
		name         string
		spec         ImageSpec
		w, h         int
		rw, rh, toks int
	}{
		// 800/32 = 25 and 1280/32 = 40 exactly: 25*40 tokens.
		{"1280x800", ImageSpec{}, 1280, 800, 1280, 800, 1000},
		// 1080/32 = 33.75 rounds to 34 -> 1088.
		{"1920x1080", ImageSpec{}, 1920, 1080, 1920, 1088, 2040},
		// 80/32 = 2.5 rounds half to even -> 2 (64), 112/32 = 3.5 -> 4 (128).
		{"round half to even", ImageSpec{}, 112, 80, 128, 64, 8},
		// 32*32 < 4096: beta = sqrt(4096/400) = 3.2, 20*3.2/32 = 2 -> 64.
		{"upscaled", ImageSpec{}, 20, 20, 64, 64, 4},
		{"upscaled thin", ImageSpec{}, 100, 3, 384, 32, 12},
		{"4000x3000", ImageSpec{}, 4000, 3000, 4000, 3008, 11750},
		// Above max: beta = sqrt(48e6/16777216), floor(6000/beta/32) = 110.
		{"downscaled", ImageSpec{}, 8000, 6000, 4704, 3520, 16170},
		{"8k", ImageSpec{}, 7680, 4320, 5440, 3072, 16320},
		{"ratio 200", ImageSpec{}, 200, 1, 192, 32, 6},
		{"1366x768", ImageSpec{}, 1366, 768, 1376, 768, 1032},
		{"1000x1000", ImageSpec{}, 1000, 1000, 992, 992, 961},
		{"qwen2.5 1280x800", qwen25, 1280, 800, 1288, 812, 1334},
		{"qwen2.5 1920x1080", qwen25, 1920, 1080, 1932, 1092, 2691},
		{"qwen2-vl hf 1280x800", qwen2hf, 1280, 800, 1260, 784, 1260},
		{"qwen2-vl hf 4k", qwen2hf, 3840, 2160, 1316, 728, 1222},
		// Python would give height 0 here; one token row is the floor.
		{"tiny max", ImageSpec{MinPixels: 4096, MaxPixels: 8192}, 6400, 32, 1280, 32, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, h, err := tc.spec.Resize(tc.w, tc.h)
			if err != nil || w != tc.rw || h != tc.rh {
				t.Errorf("Resize(%d, %d) = %d, %d, %v; want %d, %d", tc.w, tc.h, w, h, err, tc.rw, tc.rh)
			}
			n, err := tc.spec.Tokens(tc.w, tc.h)
			if err != nil || n != tc.toks {
				t.Errorf("Tokens(%d, %d) = %d, %v; want %d", tc.w, tc.h, n, err, tc.toks)
			}
		})
	}

	fixed := ImageSpec{FixedTokens: 64}
	if n, err := fixed.Tokens(1920, 1080); err != nil || n != 64 {
		t.Errorf("FixedTokens: Tokens = %d, %v; want 64", n, err)
	}

	for _, tc := range []struct {
		name string
		spec ImageSpec
		w, h int
	}{
		{"zero", ImageSpec{}, 0, 100},
		{"negative", ImageSpec{}, 100, -1},
		{"ratio 201", ImageSpec{}, 201, 1},
		{"huge", ImageSpec{}, 1 << 30, 100},
		{"min above max", ImageSpec{MinPixels: 10, MaxPixels: 5}, 100, 100},
		{"negative fixed", ImageSpec{FixedTokens: -1}, 100, 100},
		{"negative patch", ImageSpec{PatchSize: -14}, 100, 100},
	} {
		if n, err := tc.spec.Tokens(tc.w, tc.h); err == nil {
			t.Errorf("%s: Tokens(%d, %d) = %d, want an error", tc.name, tc.w, tc.h, n)
		}
	}
	if _, err := (ImageSpec{}).Tokens(201, 1); !errors.Is(err, ErrImageSize) {
		t.Errorf("aspect-ratio error %v is not ErrImageSize", err)
	}
}

// TestImageSpecBounds: specs that would give a screenshot millions of
// tokens (and the process an out-of-memory crash) are refused, naming the
// flag and the bound; the largest allowed ones are accepted.
func TestImageSpecBounds(t *testing.T) {
	for _, tc := range []struct {
		spec ImageSpec
		want string
	}{
		{ImageSpec{FixedTokens: 10000000}, "FixedTokens (--image-tokens) is 10000000, want 0..16384"},
		{ImageSpec{FixedTokens: MaxImageTokens + 1}, "--image-tokens"},
		{ImageSpec{MinPixels: 9000000000000000000, MaxPixels: 9100000000000000000}, "MinPixels (--min-pixels) is 9000000000000000000, want 0..33177600"},
		{ImageSpec{MinPixels: 4096, MaxPixels: MaxImagePixels + 1}, "MaxPixels (--max-pixels) is 33177601, want 0..33177600"},
		{ImageSpec{PatchSize: 1, MergeSize: 1, MinPixels: 4096, MaxPixels: 1 << 20}, "gives up to 1048576 tokens per screenshot, over 16384"},
		{ImageSpec{PatchSize: 1 << 40, MergeSize: 1 << 40}, "bad patch size"},
	} {
		err := tc.spec.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate() = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
	for _, ok := range []ImageSpec{DefaultImageSpec(), {FixedTokens: MaxImageTokens}, {MinPixels: 4096, MaxPixels: DefaultMaxPixels},
		{PatchSize: 64, MergeSize: 2, MinPixels: MaxImagePixels, MaxPixels: MaxImagePixels}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: Validate() = %v, want nil", ok, err)
		}
	}
}

// byteEncoder is a stand-in tokenizer: one token per byte (id = byte) and
// the special tokens as 1000+. It has no offsets, so it exercises the
// piecewise path.
type byteEncoder struct{}

var fakeSpecials = []string{ImStart, ImEnd, VisionStart, VisionEnd, ImagePad}

func (byteEncoder) Encode(s string) []int32 {
	var ids []int32
	for len(s) > 0 {
		matched := false
		for i, sp := range fakeSpecials {
			if strings.HasPrefix(s, sp) {
				ids = append(ids, int32(1000+i))
				s = s[len(sp):]
				matched = true
				break
			}
		}
		if !matched {
			ids = append(ids, int32(s[0]))
			s = s[1:]
		}
	}
	return ids
}

func (byteEncoder) Decode(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 1000 {
			b.WriteString(fakeSpecials[id-1000])
		} else {
			b.WriteByte(byte(id))
		}
	}
	return b.String()
}

func (byteEncoder) TokenID(tok string) (int32, bool) {
	if i := slices.Index(fakeSpecials, tok); i >= 0 {
		return int32(1000 + i), true
	}
	return 0, false
}

func (byteEncoder) VocabSize() int { return 1000 + len(fakeSpecials) }

var conversation = []Message{
	{Role: System, Parts: []Part{Text("Be brief.")}},
	{Role: User, Parts: []Part{Image(64, 64), Text("Click OK")}},
	{Role: Assistant, Parts: []Part{Text("<think>ok</think>"), Text("click(1,2)")}},
}

func TestTemplateText(t *testing.T) {
	tpl, err := New(byteEncoder{}, ImageSpec{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.Text(conversation)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nBe brief.<|im_end|>\n" +
		"<|im_start|>user\n<|vision_start|><|image_pad|><|image_pad|><|image_pad|><|image_pad|><|vision_end|>Click OK<|im_end|>\n" +
		"<|im_start|>assistant\n<think>ok</think>click(1,2)<|im_end|>\n"
	if got != want {
		t.Errorf("Text() =\n%q\nwant\n%q", got, want)
	}
}

func TestRenderAnnotations(t *testing.T) {
	tpl, err := New(byteEncoder{}, ImageSpec{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tpl.Render(conversation)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := tpl.Text(conversation)
	if got := byteEncoder.Decode(byteEncoder{}, r.IDs); got != text {
		t.Fatalf("rendered ids decode to %q, want %q", got, text)
	}
	if len(r.Info) != len(r.IDs) {
		t.Fatalf("%d infos for %d ids", len(r.Info), len(r.IDs))
	}
	// Describe each token as message/part/role/kind and check the runs.
	type run struct {
		msg, part int32
		role      Role
		kind      Kind
		text      string
	}
	var runs []run
	for i, in := range r.Info {
		tok := byteEncoder.Decode(byteEncoder{}, r.IDs[i:i+1])
		if n := len(runs); n > 0 && runs[n-1].msg == in.Message && runs[n-1].part == in.Part && runs[n-1].kind == in.Kind {
			runs[n-1].text += tok
			continue
		}
		runs = append(runs, run{in.Message, in.Part, in.Role, in.Kind, tok})
	}
	pads := strings.Repeat(ImagePad, 4)
	want := []run{
		{0, -1, System, KindHeader, "<|im_start|>system\n"},
		{0, 0, System, KindText, "Be brief."},
		{0, -1, System, KindEnd, "<|im_end|>"},
		{0, -1, System, KindSep, "\n"},
		{1, -1, User, KindHeader, "<|im_start|>user\n"},
		{1, 0, User, KindImage, VisionStart + pads + VisionEnd},
		{1, 1, User, KindText, "Click OK"},
		{1, -1, User, KindEnd, "<|im_end|>"},
		{1, -1, User, KindSep, "\n"},
		{2, -1, Assistant, KindHeader, "<|im_start|>assistant\n"},
		{2, 0, Assistant, KindText, "<think>ok</think>"},
		{2, 1, Assistant, KindText, "click(1,2)"},
		{2, -1, Assistant, KindEnd, "<|im_end|>"},
		{2, -1, Assistant, KindSep, "\n"},
	}
	if !slices.Equal(runs, want) {
		t.Errorf("annotations:\n got %+v\nwant %+v", runs, want)
	}

	mask := r.AssistantMask(false)
	var masked []int32
	for i, m := range mask {
		if m == 1 {
			masked = append(masked, r.IDs[i])
		}
	}
	if got := byteEncoder.Decode(byteEncoder{}, masked); got != "<think>ok</think>click(1,2)" {
		t.Errorf("masked tokens decode to %q", got)
	}
	withEnd := r.AssistantMask(true)
	if n := countOnes(withEnd) - countOnes(mask); n != 1 {
		t.Errorf("includeEnd adds %d tokens, want 1 (the assistant's <|im_end|>)", n)
	}

	// Incremental rendering gives the same stream.
	inc := &Rendered{}
	for i, m := range conversation {
		one, err := tpl.RenderMessage(i, m)
		if err != nil {
			t.Fatal(err)
		}
		inc.Append(one)
	}
	if !slices.Equal(inc.IDs, r.IDs) || !slices.Equal(inc.Info, r.Info) {
		t.Error("RenderMessage one by one differs from Render")
	}

	tpl.AppendGenerationPrompt(inc, len(conversation))
	tail := inc.IDs[r.Len():]
	if got := byteEncoder.Decode(byteEncoder{}, tail); got != "<|im_start|>assistant\n" {
		t.Errorf("generation prompt = %q", got)
	}
	for _, in := range inc.Info[r.Len():] {
		if in.Role != Assistant || in.Kind != KindHeader || in.Message != int32(len(conversation)) {
			t.Errorf("generation prompt token info %+v", in)
		}
	}
}

func countOnes(m []uint8) int {
	n := 0
	for _, v := range m {
		n += int(v)
	}
	return n
}

func TestRenderErrors(t *testing.T) {
	tpl, err := New(byteEncoder{}, ImageSpec{FixedTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tpl.Render(conversation[:1])
	if err != nil {
		t.Fatal(err)
	}
	n := r.Len()
	if err := tpl.AppendMessage(r, 1, Message{Role: 0, Parts: []Part{Text("x")}}); err == nil {
		t.Error("a message without a role rendered")
	}
	strict, err := New(byteEncoder{}, ImageSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := strict.AppendMessage(r, 1, Message{Role: User, Parts: []Part{Text("a"), Image(0, 0)}}); err == nil || !errors.Is(err, ErrImageSize) {
		t.Errorf("AppendMessage with a 0x0 image: %v, want ErrImageSize", err)
	}
	if r.Len() != n || len(r.Info) != n {
		t.Errorf("a failed AppendMessage left %d tokens, want %d", r.Len(), n)
	}
	if _, err := strict.Text([]Message{{Role: User, Parts: []Part{Image(1000, 1)}}}); err == nil {
		t.Error("Text with a 1000:1 image succeeded")
	}
	if _, err := New(nil, ImageSpec{}); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := New(byteEncoder{}, ImageSpec{MinPixels: 2, MaxPixels: 1}); err == nil {
		t.Error("New with MinPixels > MaxPixels succeeded")
	}
	if _, err := New(noSpecials{}, ImageSpec{}); err == nil || !strings.Contains(err.Error(), ImStart) {
		t.Errorf("New with an encoder lacking %s: %v", ImStart, err)
	}
}

type noSpecials struct{ byteEncoder }

func (noSpecials) TokenID(string) (int32, bool) { return 0, false }

func TestRoleText(t *testing.T) {
	b, err := json.Marshal(struct{ R []Role }{[]Role{System, User, Assistant}})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"R":["system","user","assistant"]}` {
		t.Errorf("roles marshal to %s", b)
	}
	var back struct{ R []Role }
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.R, []Role{System, User, Assistant}) {
		t.Errorf("roles unmarshal to %v, %v", back.R, err)
	}
	if err := json.Unmarshal([]byte(`{"R":["tool"]}`), &back); err == nil {
		t.Error(`role "tool" parsed`)
	}
	if _, err := json.Marshal(Role(9)); err == nil {
		t.Error("Role(9) marshalled")
	}
}

// qwen loads the real tokenizer, or fails saying how to install it.
func qwen(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatalf("%v\nThe Qwen3 tokenizer.json is installed by scripts/fetch-tokenizer.sh (run by `make setup`); run it first.", err)
	}
	return tok
}

// With the real tokenizer the rendered ids must equal encoding the whole
// template text, even where parts glue together.
func TestRenderMatchesQwen(t *testing.T) {
	tok := qwen(t)
	tpl, err := New(tok, ImageSpec{})
	if err != nil {
		t.Fatal(err)
	}
	convs := [][]Message{
		conversation,
		{
			{Role: System, Parts: []Part{Text("You are a GUI agent.")}},
			{Role: User, Parts: []Part{Text("Open "), Text("Firefox"), Image(1280, 800), Text("\n\nthen search.")}},
			{Role: Assistant, Parts: []Part{Text("\n\n<think>\nThe user's browser is closed.\n</think>\n\npyautogui.click(x=512, y=300)")}},
			{Role: User, Parts: []Part{Image(1920, 1080)}},
			{Role: Assistant, Parts: []Part{Text("  done ✅ "), Text("e\u0301"), Text("\u0301x")}},
		},
		{
			{Role: User, Parts: []Part{Text(" \n leading whitespace"), Text("<|im_end|> inside content")}},
			{Role: Assistant, Parts: nil},
			{Role: Assistant, Parts: []Part{Text("它说：好的。"), Image(200, 100), Text("'s"), Text("s")}},
		},
	}
	for ci, msgs := range convs {
		r, err := tpl.Render(msgs)
		if err != nil {
			t.Fatal(err)
		}
		text, err := tpl.Text(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if want := tok.Encode(text); !slices.Equal(r.IDs, want) {
			t.Errorf("conversation %d: Render ids differ from Encode(Text()):\n got %v\nwant %v", ci, r.IDs, want)
		}
		// Tokens of a message decode back to that message's text, and the
		// message boundaries fall on <|im_start|>.
		for i, in := range r.Info {
			if in.Kind == KindHeader && (i == 0 || r.Info[i-1].Message != in.Message) && r.IDs[i] != tpl.imStart {
				t.Errorf("conversation %d: message %d starts with %d, not <|im_start|>", ci, in.Message, r.IDs[i])
			}
		}
	}

	// The assistant mask covers exactly the assistant's text (when no token
	// straddles the header, i.e. content does not start with "\n").
	msgs := convs[0]
	r, _ := tpl.Render(msgs)
	var masked []int32
	for i, m := range r.AssistantMask(false) {
		if m == 1 {
			masked = append(masked, r.IDs[i])
		}
	}
	if got := tok.Decode(masked); got != "<think>ok</think>click(1,2)" {
		t.Errorf("masked assistant tokens decode to %q", got)
	}
	// Straddling: "assistant\n" + "\n\n..." tokenizes "\n\n\n" as one token,
	// which belongs to the content (its last byte is there).
	r, _ = tpl.Render(convs[1][2:3])
	for i, in := range r.Info {
		if tok.Decode(r.IDs[i:i+1]) == "\n\n\n" && in.Kind != KindText {
			t.Errorf("straddling token annotated %+v, want text", in)
		}
	}
}
