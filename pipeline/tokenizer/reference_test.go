package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The fixture testdata/reference.jsonl holds, for every corpus string, the
// ids of the reference JS tokenizer. Regenerate it (from this directory) with
//
//	go run testdata/gen_corpus.go | node testdata/reference.js > testdata/reference.jsonl
//	node testdata/reference.js --meta > testdata/reference.meta.json
//
// after `scripts/fetch-tokenizer.sh`.

type refCase struct {
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
}

type refMeta struct {
	Package string `json:"package"`
	Node    string `json:"node"`
	Unicode string `json:"unicode"`
}

const minCorpus = 2000

// defaultTok loads the Qwen3 tokenizer or fails the test saying how to get it.
func defaultTok(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := Default()
	if err != nil {
		t.Fatalf("%v\nThe Qwen3 tokenizer.json is installed by scripts/fetch-tokenizer.sh (run by `make setup`); run it first.", err)
	}
	return tok
}

func readFixture(t testing.TB) []refCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "reference.jsonl"))
	if err != nil {
		t.Fatalf("reading the fixture: %v", err)
	}
	defer f.Close()
	var cases []refCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		var c refCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("fixture line %d: %v", line, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the fixture: %v", err)
	}
	if len(cases) < minCorpus {
		t.Fatalf("fixture has %d strings, want at least %d", len(cases), minCorpus)
	}
	return cases
}

func readMeta(t testing.TB) refMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "reference.meta.json"))
	if err != nil {
		t.Fatalf("reading the fixture metadata: %v", err)
	}
	var m refMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("fixture metadata: %v", err)
	}
	return m
}

// describe renders ids with their decoded text, for failure messages.
func describe(tok *Tokenizer, ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		s, _ := tok.Token(id)
		parts[i] = fmt.Sprintf("%d:%q", id, s)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// compareAll checks got(text) against want for every case and reports the
// first mismatches with their text.
func compareAll(t *testing.T, tok *Tokenizer, what string, cases []refCase) {
	t.Helper()
	bad := 0
	for _, c := range cases {
		got := tok.Encode(c.Text)
		if slices.Equal(got, c.IDs) {
			continue
		}
		bad++
		if bad <= 10 {
			t.Errorf("%s mismatch for %q:\n got %s\nwant %s", what, c.Text, describe(tok, got), describe(tok, c.IDs))
		}
	}
	t.Logf("%s: %d/%d strings match", what, len(cases)-bad, len(cases))
	if bad > 0 {
		t.Errorf("%s: %d of %d strings differ", what, bad, len(cases))
	}
}

func TestFixtureMatchesReference(t *testing.T) {
	tok := defaultTok(t)
	cases := readFixture(t)
	if m := readMeta(t); m.Unicode != jsUnicodeVersion {
		t.Errorf("fixture made with Unicode %s but unicode_tables.go with %s: regenerate both with the same node", m.Unicode, jsUnicodeVersion)
	}
	compareAll(t, tok, "fixture", cases)
}

// runReference runs testdata/reference.js with the given mode and JSON-lines
// input; it skips the test when node or the npm package is missing.
func runReference(t *testing.T, mode string, input []byte) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found in PATH: skipping the live comparison with the JS tokenizer (the fixture test still runs)")
	}
	args := []string{filepath.Join("testdata", "reference.js")}
	if mode != "" {
		args = append(args, mode)
	}
	cmd := exec.Command(node, args...)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		t.Skipf("JS tokenizer not available: %s (run scripts/fetch-tokenizer.sh)", strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		msg := stderr.String()
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return out
}

func jsonLines[T any](t *testing.T, out []byte) []T {
	t.Helper()
	var res []T
	for _, line := range bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("reference output %q: %v", line, err)
		}
		res = append(res, v)
	}
	return res
}

// liveExtras are strings beyond the fixture that only the live test checks.
var liveExtras = []string{
	"live check: it's 5 o'clock\n\n\t<|im_end|> 😀",
	"\u0041\u030a\u0323 \u1e0b\u0323 \u0071\u0307\u0323",
	strings.Repeat("e\u0301\u0316", 12),
}

func TestLiveReference(t *testing.T) {
	tok := defaultTok(t)
	meta := readMeta(t)
	live := jsonLines[refMeta](t, runReference(t, "--meta", nil))
	if len(live) != 1 {
		t.Fatalf("reference.js --meta printed %d lines", len(live))
	}
	if live[0].Unicode != meta.Unicode || live[0].Package != meta.Package {
		t.Skipf("live JS (%s, Unicode %s) differs from the fixture's (%s, Unicode %s): its ids may legitimately differ",
			live[0].Package, live[0].Unicode, meta.Package, meta.Unicode)
	}

	cases := readFixture(t)
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	texts := make([]string, 0, len(cases)+len(liveExtras))
	for _, c := range cases {
		texts = append(texts, c.Text)
	}
	texts = append(texts, liveExtras...)
	for _, s := range texts {
		if err := enc.Encode(map[string]string{"text": s}); err != nil {
			t.Fatal(err)
		}
	}
	got := jsonLines[refCase](t, runReference(t, "", in.Bytes()))
	if len(got) != len(texts) {
		t.Fatalf("reference.js returned %d results for %d texts", len(got), len(texts))
	}
	stale := 0
	for i, c := range cases {
		if !slices.Equal(got[i].IDs, c.IDs) {
			stale++
			if stale <= 3 {
				t.Errorf("fixture is stale for %q: live JS gives %v, fixture %v", c.Text, got[i].IDs, c.IDs)
			}
		}
	}
	compareAll(t, tok, "live JS", got)

	// Decoding: whole sequences, prefixes cut mid-character, and single
	// tokens, which the reference turns into U+FFFD where bytes are partial.
	var seqs [][]int32
	for i, c := range got {
		if i%4 != 0 || len(c.IDs) == 0 {
			continue
		}
		seqs = append(seqs, c.IDs, c.IDs[:len(c.IDs)/2], c.IDs[len(c.IDs)/3:], c.IDs[:1])
	}
	in.Reset()
	for _, ids := range seqs {
		if err := enc.Encode(map[string][]int32{"ids": ids}); err != nil {
			t.Fatal(err)
		}
	}
	type decoded struct {
		Text string `json:"text"`
	}
	dec := jsonLines[decoded](t, runReference(t, "--decode", in.Bytes()))
	if len(dec) != len(seqs) {
		t.Fatalf("reference.js --decode returned %d results for %d inputs", len(dec), len(seqs))
	}
	bad := 0
	for i, ids := range seqs {
		if g := tok.Decode(ids); g != dec[i].Text {
			bad++
			if bad <= 5 {
				t.Errorf("Decode(%v) = %q, JS gives %q", ids, g, dec[i].Text)
			}
		}
	}
	t.Logf("decode: %d/%d sequences match", len(seqs)-bad, len(seqs))
}
