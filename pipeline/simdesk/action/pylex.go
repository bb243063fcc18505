package action

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A small lexer and value model for the subset of Python that agents write
// around pyautogui calls: calls with positional and keyword arguments,
// numbers (with + - * / arithmetic), strings (adjacent or +-joined ones
// concatenated), lists, tuples, True/False/None, imports (which may rename
// pyautogui or import its functions by name) and pyautogui.X = ... settings
// (ignored).

type tokKind int

const (
	tEOF tokKind = iota
	tName
	tNum
	tStr
	tPunct
	tSep // ";" or a newline ending a statement
)

type token struct {
	kind  tokKind
	text  string  // name or punctuation
	num   float64 // numbers
	float bool    // the number was written as a float (1.0, 1e3)
	str   string  // decoded strings
	pos   int
}

// maxTokens bounds the work on hostile input; real scripts use a few
// hundred tokens at most.
const maxTokens = 1 << 16

func lex(src string) ([]token, error) {
	var out []token
	depth := 0 // inside brackets newlines do not end statements
	for i := 0; i < len(src); {
		if len(out) > maxTokens {
			return nil, fmt.Errorf("script longer than %d tokens", maxTokens)
		}
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
		case c == '\n' || c == ';':
			if depth == 0 || c == ';' {
				out = append(out, token{kind: tSep, pos: i})
			}
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9'):
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.' || src[j] == 'e' || src[j] == 'E' || src[j] == '_' ||
				((src[j] == '-' || src[j] == '+') && j > i && (src[j-1] == 'e' || src[j-1] == 'E'))) {
				j++
			}
			f, err := strconv.ParseFloat(strings.ReplaceAll(src[i:j], "_", ""), 64)
			if err != nil {
				return nil, fmt.Errorf("bad number %q at offset %d", src[i:j], i)
			}
			lit := src[i:j]
			out = append(out, token{kind: tNum, num: f, float: strings.ContainsAny(lit, ".eE"), pos: i})
			i = j
		case c == '\'' || c == '"' || ((c == 'r' || c == 'u' || c == 'R' || c == 'U' || c == 'b') && i+1 < len(src) && (src[i+1] == '\'' || src[i+1] == '"')):
			raw := c == 'r' || c == 'R'
			if c != '\'' && c != '"' {
				i++
			}
			s, n, err := lexString(src[i:], raw)
			if err != nil {
				return nil, fmt.Errorf("string at offset %d: %w", i, err)
			}
			out = append(out, token{kind: tStr, str: s, pos: i})
			i += n
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == '.' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			out = append(out, token{kind: tName, text: src[i:j], pos: i})
			i = j
		case strings.IndexByte("()[]{},=:-+*/", c) >= 0:
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth = max(depth-1, 0)
			}
			out = append(out, token{kind: tPunct, text: string(c), pos: i})
			i++
		default:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, fmt.Errorf("unexpected character %q at offset %d", r, i)
		}
	}
	return append(out, token{kind: tEOF, pos: len(src)}), nil
}

// lexString decodes a Python string literal at the start of s and returns
// its value and length.
func lexString(s string, raw bool) (string, int, error) {
	q := s[:1]
	if strings.HasPrefix(s, q+q+q) {
		q = q + q + q
	}
	var b strings.Builder
	for i := len(q); i < len(s); {
		if strings.HasPrefix(s[i:], q) {
			return b.String(), i + len(q), nil
		}
		c := s[i]
		if c == '\n' && len(q) == 1 {
			return "", 0, fmt.Errorf("unterminated string")
		}
		if c != '\\' || raw {
			if c == '\\' && raw && i+1 < len(s) {
				b.WriteString(s[i : i+2])
				i += 2
				continue
			}
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n':
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			// Octal: up to three digits (\0 is NUL).
			v, j := 0, i-1
			for j < len(s) && j < i+2 && s[j] >= '0' && s[j] <= '7' {
				v = v*8 + int(s[j]-'0')
				j++
			}
			b.WriteRune(rune(v))
			i = j
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n > len(s) {
				return "", 0, fmt.Errorf("short \\%c escape", e)
			}
			v, err := strconv.ParseUint(s[i:i+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(v)) {
				return "", 0, fmt.Errorf("bad \\%c escape %q", e, s[i:i+n])
			}
			b.WriteRune(rune(v))
			i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}
