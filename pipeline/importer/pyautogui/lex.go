package pyautogui

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The lexer and parser accept the small Python subset agents send to
// OSWorld: imports, assignments, and calls whose arguments are literals.
// Anything else fails, and the action is imported as kind "unknown".

type tokKind int

const (
	tName tokKind = iota
	tNum
	tStr
	tPunct // ( ) [ ] , = ; - + and the statement separator "\n"
	tEOF
)

type token struct {
	kind tokKind
	text string // name, punctuation, or decoded string
	num  float64
}

const maxTokens = 1 << 16 // bounds the work on hostile input

func lex(src string) ([]token, error) {
	var out []token
	depth := 0
	for i := 0; i < len(src); {
		if len(out) > maxTokens {
			return nil, fmt.Errorf("script too long")
		}
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n': // line continuation
			i += 2
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\n' || c == ';':
			if depth == 0 {
				out = append(out, token{kind: tPunct, text: "\n"})
			}
			i++
		case c == '(' || c == '[' || c == '{':
			depth++
			out = append(out, token{kind: tPunct, text: string(c)})
			i++
		case c == ')' || c == ']' || c == '}':
			if depth == 0 {
				return nil, fmt.Errorf("unbalanced %q", c)
			}
			depth--
			out = append(out, token{kind: tPunct, text: string(c)})
			i++
		case c == ',' || c == '=' || c == '-' || c == '+' || c == ':' || c == '.':
			if c == '.' && i+1 < len(src) && isDigit(src[i+1]) {
				n, w, err := lexNum(src[i:])
				if err != nil {
					return nil, err
				}
				out = append(out, token{kind: tNum, num: n})
				i += w
				continue
			}
			if c == '=' && i+1 < len(src) && src[i+1] == '=' {
				return nil, fmt.Errorf("comparison is not supported")
			}
			out = append(out, token{kind: tPunct, text: string(c)})
			i++
		case isDigit(c):
			n, w, err := lexNum(src[i:])
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tNum, num: n})
			i += w
		case c == '"' || c == '\'':
			s, w, err := lexStr(src[i:], false)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tStr, text: s})
			i += w
		case isNameStart(c):
			j := i
			for j < len(src) && (isNameStart(src[j]) || isDigit(src[j])) {
				j++
			}
			word := src[i:j]
			if j < len(src) && (src[j] == '"' || src[j] == '\'') && isStrPrefix(word) {
				s, w, err := lexStr(src[j:], strings.ContainsAny(word, "rR"))
				if err != nil {
					return nil, err
				}
				out = append(out, token{kind: tStr, text: s})
				i = j + w
				continue
			}
			out = append(out, token{kind: tName, text: word})
			i = j
		default:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, fmt.Errorf("unexpected character %q", r)
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unclosed bracket")
	}
	return append(out, token{kind: tEOF}), nil
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isStrPrefix reports a string prefix whose literal we can evaluate; f- and
// b-strings fall through as a name followed by a string, a syntax error.
func isStrPrefix(w string) bool {
	switch strings.ToLower(w) {
	case "r", "u":
		return true
	}
	return false
}

func lexNum(s string) (float64, int, error) {
	j := 0
	for j < len(s) && (isDigit(s[j]) || s[j] == '.' || s[j] == '_' || s[j] == 'e' || s[j] == 'E' ||
		(j > 0 && (s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E'))) {
		j++
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s[:j], "_", ""), 64)
	if err != nil {
		return 0, 0, fmt.Errorf("bad number %q", s[:j])
	}
	return v, j, nil
}

// lexStr decodes a Python string literal (single, double or triple quoted)
// at the start of s and returns its value and length.
func lexStr(s string, raw bool) (string, int, error) {
	q := s[:1]
	if strings.HasPrefix(s, strings.Repeat(q, 3)) {
		q = strings.Repeat(q, 3)
	}
	var b strings.Builder
	for i := len(q); i < len(s); {
		if strings.HasPrefix(s[i:], q) {
			return b.String(), i + len(q), nil
		}
		c := s[i]
		if c == '\n' && len(q) == 1 {
			return "", 0, fmt.Errorf("newline in string")
		}
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		if raw {
			b.WriteString(s[i : i+2])
			i += 2
			continue
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
		case '0':
			b.WriteByte(0)
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n > len(s) {
				return "", 0, fmt.Errorf("bad escape")
			}
			v, err := strconv.ParseUint(s[i:i+n], 16, 32)
			if err != nil || v > utf8.MaxRune {
				return "", 0, fmt.Errorf("bad escape \\%c%s", e, s[i:i+n])
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
