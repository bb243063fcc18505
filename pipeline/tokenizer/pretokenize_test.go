package tokenizer

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

var (
	qwenReOnce sync.Once
	qwenRe     *regexp2.Regexp
	qwenReErr  error
)

// regexPieces splits s with Qwen's pattern run by regexp2 (the general
// pre-tokenizer path), the oracle for scanPretoken.
func regexPieces(t testing.TB, s string) []string {
	t.Helper()
	qwenReOnce.Do(func() { qwenRe, qwenReErr = compileJSRegex(qwenPattern) })
	if qwenReErr != nil {
		t.Fatalf("compiling Qwen's pattern: %v", qwenReErr)
	}
	var out []string
	runSteps([]splitStep{{re: qwenRe, mode: splitIsolated}}, s, 0, func(a, b int) { out = append(out, s[a:b]) })
	return out
}

func scanPieces(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := scanPretoken(s, i)
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// pretokSamples are hand-picked cases for every alternative of the pattern.
var pretokSamples = []string{
	"", "a", "'s", "'S", "'sx", "'re", "'rE", "'r", "'ll", "'l", "'LLama", "'d'", "''s", "'\u017f", // ſ is no 's' here
	"hello world", " hello", "\thello", "\u00a0hello", "\nhello", "\r\nhello", ".hello", "1hello", "é", "e\u0301",
	"123", " 123", "x1y2", "٣٤", "Ⅻ½", "...", " ...", " ...\n\n", "a.\r\n\r\nb", "  ..", "\t..",
	"\n", "\n\n", " \n ", "  \n\n  x", "a  b", "a   ", "   ", "\u3000\u3000x", "\ufeff\ufeffx", "\u0085\u0085x", "\u2028x", "\u200bx",
	"😀😀 😀", "中文 字", "a\u0301\u0302b", "\U000323d5\U000323d5 x", "x\U0001e5e2",
}

func TestScannerMatchesRegex(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := scanPieces(s), regexPieces(t, s); !slices.Equal(got, want) {
			t.Fatalf("pre-tokens of %q:\nscanner %q\nregexp2 %q", s, got, want)
		}
	}
	for _, s := range pretokSamples {
		check(s)
	}
	for _, c := range readFixture(t) {
		// The pattern runs on NFC text between added tokens; running it on
		// whole strings only makes the check stricter.
		check(normalize(c.Text, true, false).s)
	}
	// Random strings over characters that exercise the class boundaries.
	pool := []string{"a", "Z", "é", "中", "\U000323d5", "1", "٣", "½", " ", " ", "\t", "\n", "\r", "\u00a0", "\u3000", "\ufeff",
		"\u0085", "\u2028", "\u200b", "'", "s", "t", "R", "e", "L", "l", "d", ".", ",", "!", "😀", "\u0301", "-", "\v"}
	r := uint64(42)
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		r = r*6364136223846793005 + 1442695040888963407
		n := int(r>>59) + 1
		for j := 0; j < n; j++ {
			r = r*6364136223846793005 + 1442695040888963407
			b.WriteString(pool[(r>>33)%uint64(len(pool))])
		}
		check(b.String())
	}
}

func FuzzScanner(f *testing.F) {
	for _, s := range pretokSamples {
		f.Add(s)
	}
	re, err := compileJSRegex(qwenPattern)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		var want []string
		runSteps([]splitStep{{re: re, mode: splitIsolated}}, s, 0, func(a, b int) { want = append(want, s[a:b]) })
		if got := scanPieces(s); !slices.Equal(got, want) {
			t.Fatalf("pre-tokens of %q: scanner %q, regexp2 %q", s, got, want)
		}
	})
}

func TestTranslateJSRegex(t *testing.T) {
	for _, tc := range []struct {
		pattern, in string
		want        []string
	}{
		{`\d+`, "a12٣4", []string{"a", "12", "٣", "4"}}, // JS \d is ASCII only
		{`\w+`, "ab_1é", []string{"ab_1", "é"}},
		{`.`, "a\u2028b", []string{"a", "\u2028", "b"}},
		{`\s+$`, "a  \n", []string{"a", "  \n"}},
		{`\#\&\~`, "x#&~y", []string{"x", "#&~", "y"}},
		{`\u{1F600}`, "a😀b", []string{"a", "😀", "b"}},
		{`[^\s\p{L}]+`, "ab, cd!!", []string{"ab", ",", " cd", "!!"}}, // gaps are pieces too
	} {
		re, err := compileJSRegex(tc.pattern)
		if err != nil {
			t.Fatalf("compileJSRegex(%q): %v", tc.pattern, err)
		}
		var got []string
		runSteps([]splitStep{{re: re, mode: splitIsolated}}, tc.in, 0, func(a, b int) { got = append(got, tc.in[a:b]) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("split %q by %q = %q, want %q", tc.in, tc.pattern, got, tc.want)
		}
	}
	if _, err := translateJSRegex(`[\S]`); err == nil {
		t.Error(`translateJSRegex("[\S]") succeeded; a negated class escape inside [...] cannot be inlined`)
	}
}

func TestClassTables(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want uint8
	}{
		{'a', clsL}, {'Z', clsL}, {'中', clsL}, {'\U000323d5', clsL}, {'\U0001e5e2', clsL}, {'ſ', clsL},
		{'7', clsN}, {'٣', clsN}, {'½', clsN}, {'Ⅻ', clsN}, {'\U0001d7ce', clsN},
		{' ', clsS}, {'\t', clsS}, {'\n', clsS}, {'\v', clsS}, {'\u00a0', clsS}, {'\u3000', clsS}, {'\ufeff', clsS}, {'\u2028', clsS},
		{'\u0085', 0}, {'\u200b', 0}, {'.', 0}, {'😀', 0}, {'\u0301', 0}, {'\uFFFD', 0},
	} {
		if got := classOf(tc.r); got != tc.want {
			t.Errorf("classOf(%U) = %b, want %b", tc.r, got, tc.want)
		}
	}
}
