package simdesk

import (
	"errors"
	"fmt"
	"strings"
)

// The simulator's shell language: the part of bash that setup steps and
// agents use, parsed completely before anything runs, so that a command
// line the simulator cannot run changes nothing. Words with single and
// double quotes, backslashes, $NAME and ${NAME}; ~ at the start of a word;
// *, ? and [...] globs over the simulated file system; NAME=value
// assignments; the operators && || ; | and newlines; redirections > >> <
// 2> 2>> &> 2>&1 >&2 and /dev/null. Anything else (subshells, command
// substitution, here-documents, background jobs, control structures) is
// ErrUnsupported.

// ErrUnsupported marks a command the simulator cannot run: nothing ran.
// OSWorld's server answers such failures with HTTP 500 and a message.
var ErrUnsupported = errors.New("not supported by the simulator")

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrUnsupported)
}

// wordPart is a piece of a shell word: literal text, or a variable.
type wordPart struct {
	text   string
	quoted bool   // inside quotes: no tilde or glob expansion
	varRef string // $NAME, expanded when the command runs
}

type shWord []wordPart

// literal returns the word's text when it has no variables.
func (w shWord) literal() (string, bool) {
	var b strings.Builder
	for _, p := range w {
		if p.varRef != "" {
			return "", false
		}
		b.WriteString(p.text)
	}
	return b.String(), true
}

// sketch renders the word for static checks, variables as $NAME.
func (w shWord) sketch() string {
	var b strings.Builder
	for _, p := range w {
		if p.varRef != "" {
			b.WriteString("$" + p.varRef)
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

type shTokKind int

const (
	stWord shTokKind = iota
	stOp             // && || | ; and newline (as ";")
	stRedir
)

type shToken struct {
	kind shTokKind
	word shWord
	op   string
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (!first && c >= '0' && c <= '9')
}

// maxShellTokens bounds the work on hostile input.
const maxShellTokens = 1 << 14

// lexShell splits a command line into words, operators and redirections.
func lexShell(s string) ([]shToken, error) {
	var toks []shToken
	var cur shWord
	inWord := false
	lit := func(text string, quoted bool) {
		if n := len(cur); n > 0 && cur[n-1].varRef == "" && cur[n-1].quoted == quoted {
			cur[n-1].text += text
		} else {
			cur = append(cur, wordPart{text: text, quoted: quoted})
		}
		inWord = true
	}
	endWord := func() {
		if inWord {
			toks = append(toks, shToken{kind: stWord, word: cur})
		}
		cur, inWord = nil, false
	}
	// dollar reads $NAME or ${NAME} at s[i] (s[i] == '$') and returns the
	// index after it.
	dollar := func(i int, quoted bool) (int, error) {
		switch {
		case i+1 >= len(s):
			lit("$", quoted)
			return i + 1, nil
		case s[i+1] == '(' || s[i+1] == '[':
			return 0, unsupported("command substitution and arithmetic ($(...))")
		case s[i+1] == '{':
			j := strings.IndexByte(s[i+2:], '}')
			if j < 0 {
				return 0, fmt.Errorf("unterminated ${")
			}
			name := s[i+2 : i+2+j]
			if name == "" || !isNameByte(name[0], true) || strings.IndexFunc(name, func(r rune) bool { return r > 127 || !isNameByte(byte(r), false) }) >= 0 {
				return 0, unsupported("parameter expansion ${%s}", name)
			}
			cur = append(cur, wordPart{varRef: name, quoted: quoted})
			inWord = true
			return i + 3 + j, nil
		case isNameByte(s[i+1], true):
			j := i + 1
			for j < len(s) && isNameByte(s[j], false) {
				j++
			}
			cur = append(cur, wordPart{varRef: s[i+1 : j], quoted: quoted})
			inWord = true
			return j, nil
		case strings.IndexByte("?!#@*$-0123456789", s[i+1]) >= 0:
			return 0, unsupported("special parameter $%c", s[i+1])
		}
		lit("$", quoted)
		return i + 1, nil
	}
	for i := 0; i < len(s); {
		if len(toks) > maxShellTokens {
			return nil, fmt.Errorf("command line longer than %d tokens", maxShellTokens)
		}
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
			i++
		case c == '\n':
			endWord()
			toks = append(toks, shToken{kind: stOp, op: ";"})
			i++
		case c == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\\':
			if i+1 >= len(s) {
				lit("\\", false)
				i++
				continue
			}
			if s[i+1] != '\n' {
				lit(s[i+1:i+2], true)
			}
			i += 2
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			lit(s[i+1:i+1+j], true)
			i += j + 2
		case c == '"':
			lit("", true)
			i++
			for {
				if i >= len(s) {
					return nil, fmt.Errorf("unterminated double quote")
				}
				c := s[i]
				if c == '"' {
					i++
					break
				}
				switch {
				case c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0:
					if s[i+1] != '\n' {
						lit(s[i+1:i+2], true)
					}
					i += 2
				case c == '$':
					j, err := dollar(i, true)
					if err != nil {
						return nil, err
					}
					i = j
				case c == '`':
					return nil, unsupported("command substitution (`...`)")
				default:
					lit(s[i:i+1], true)
					i++
				}
			}
		case c == '$':
			j, err := dollar(i, false)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '`':
			return nil, unsupported("command substitution (`...`)")
		case c == '(' || c == ')':
			return nil, unsupported("subshells and grouping ( ... )")
		case c == '&' || c == '|' || c == ';':
			endWord()
			two := i+1 < len(s) && s[i+1] == c
			switch {
			case c == '&' && two, c == '|' && two:
				toks = append(toks, shToken{kind: stOp, op: s[i : i+2]})
				i += 2
			case c == '&' && i+1 < len(s) && s[i+1] == '>':
				n := 2
				if i+2 < len(s) && s[i+2] == '>' {
					n = 3
				}
				toks = append(toks, shToken{kind: stRedir, op: s[i : i+n]})
				i += n
			case c == '&':
				return nil, unsupported("background jobs (&)")
			case c == ';' && two:
				return nil, unsupported("case statements (;;)")
			default:
				toks = append(toks, shToken{kind: stOp, op: string(c)})
				i++
			}
		case c == '>' || c == '<' || (c >= '0' && c <= '2' && !inWord && i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '<')):
			endWord()
			j := i
			if c >= '0' && c <= '2' {
				j++
			}
			op := s[i : j+1]
			j++
			if j < len(s) && s[j] == s[j-1] {
				op += s[j : j+1]
				j++
			}
			if strings.HasSuffix(op, "<<") {
				return nil, unsupported("here-documents (<<)")
			}
			if j < len(s) && s[j] == '(' {
				return nil, unsupported("process substitution")
			}
			if j+1 < len(s) && s[j] == '&' && s[j+1] >= '0' && s[j+1] <= '2' {
				op += s[j : j+2]
				j += 2
			}
			toks = append(toks, shToken{kind: stRedir, op: op})
			i = j
		default:
			lit(s[i:i+1], false)
			i++
		}
	}
	endWord()
	return toks, nil
}

type shRedir struct {
	op     string // > >> < 2> 2>> &> &>> 2>&1 >&2 1>&2
	target shWord // nil for 2>&1 and >&2
}

type shAssign struct {
	name  string
	value shWord
}

type shCmd struct {
	assigns []shAssign
	words   []shWord
	redirs  []shRedir
}

type shPipe []shCmd

type shAndOr struct {
	pipes []shPipe
	ops   []string // ops[i] joins pipes[i] and pipes[i+1]: && or ||
}

// shScript is a parsed command line: and-or lists run one after another.
type shScript []shAndOr

// parseShell parses a command line.
func parseShell(s string) (shScript, error) {
	toks, err := lexShell(s)
	if err != nil {
		return nil, err
	}
	var script shScript
	var list shAndOr
	var pipe shPipe
	var cmd shCmd
	empty := func(c shCmd) bool { return len(c.assigns)+len(c.words)+len(c.redirs) == 0 }
	endCmd := func(op string) error {
		if empty(cmd) {
			return fmt.Errorf("syntax error near unexpected token %q", op)
		}
		pipe = append(pipe, cmd)
		cmd = shCmd{}
		return nil
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.kind {
		case stWord:
			if len(cmd.words) == 0 {
				if name, value, ok := assignment(t.word); ok {
					cmd.assigns = append(cmd.assigns, shAssign{name: name, value: value})
					continue
				}
			}
			cmd.words = append(cmd.words, t.word)
		case stRedir:
			r := shRedir{op: t.op}
			if !strings.Contains(t.op, ">&") {
				if i+1 >= len(toks) || toks[i+1].kind != stWord {
					return nil, fmt.Errorf("syntax error: %s needs a file name", t.op)
				}
				i++
				r.target = toks[i].word
			}
			cmd.redirs = append(cmd.redirs, r)
		case stOp:
			switch t.op {
			case "|":
				if err := endCmd("|"); err != nil {
					return nil, err
				}
			case "&&", "||":
				if err := endCmd(t.op); err != nil {
					return nil, err
				}
				list.pipes = append(list.pipes, pipe)
				list.ops = append(list.ops, t.op)
				pipe = nil
			case ";":
				if empty(cmd) && len(pipe) == 0 && len(list.pipes) == 0 {
					continue // an empty line or a stray ;
				}
				if err := endCmd(";"); err != nil {
					return nil, err
				}
				list.pipes = append(list.pipes, pipe)
				script = append(script, list)
				list, pipe = shAndOr{}, nil
			}
		}
	}
	if !empty(cmd) {
		pipe = append(pipe, cmd)
	}
	if len(pipe) > 0 {
		list.pipes = append(list.pipes, pipe)
	} else if len(list.pipes) > 0 || len(list.ops) > 0 {
		return nil, fmt.Errorf("syntax error: unexpected end of command after %s", list.ops[len(list.ops)-1])
	}
	if len(list.pipes) > 0 {
		script = append(script, list)
	}
	return script, nil
}

// assignment reads NAME=value from a word whose first part is unquoted.
func assignment(w shWord) (string, shWord, bool) {
	if len(w) == 0 || w[0].quoted || w[0].varRef != "" {
		return "", nil, false
	}
	name, rest, ok := strings.Cut(w[0].text, "=")
	if !ok || name == "" || !isNameByte(name[0], true) {
		return "", nil, false
	}
	for i := 1; i < len(name); i++ {
		if !isNameByte(name[i], false) {
			return "", nil, false
		}
	}
	value := shWord{}
	if rest != "" {
		value = append(value, wordPart{text: rest})
	}
	return name, append(value, w[1:]...), true
}
