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
	kind tokKind
	text string  // name or punctuation
	num  float64 // numbers
	str  string  // decoded strings
	pos  int
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
			out = append(out, token{kind: tNum, num: f, pos: i})
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

type pyKind int

const (
	pyNone pyKind = iota
	pyNum
	pyStr
	pyBool
	pyList
)

type pyVal struct {
	kind pyKind
	num  float64
	str  string
	b    bool
	list []pyVal
}

// String renders the value as Python would, for error messages.
func (v pyVal) String() string {
	switch v.kind {
	case pyNum:
		return strconv.FormatFloat(v.num, 'g', -1, 64)
	case pyStr:
		return strconv.Quote(v.str)
	case pyBool:
		if v.b {
			return "True"
		}
		return "False"
	case pyList:
		parts := make([]string, len(v.list))
		for i, e := range v.list {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return "None"
}

// pyCall is one parsed statement: a call, a bare name, or nothing.
type pyCall struct {
	name   string
	args   []pyVal
	kwargs []kwarg
	call   bool
}

type kwarg struct {
	name string
	val  pyVal
}

func (c *pyCall) kw(name string) (pyVal, bool) {
	for _, k := range c.kwargs {
		if k.name == name {
			return k.val, true
		}
	}
	return pyVal{}, false
}

// arg returns positional argument i or keyword name.
func (c *pyCall) arg(i int, name string) (pyVal, bool) {
	if i >= 0 && i < len(c.args) {
		return c.args[i], true
	}
	return c.kw(name)
}

type pyParser struct {
	toks []token
	i    int
	// alias maps a name bound by an import to the dotted name it stands
	// for: "pg" -> "pyautogui" (import pyautogui as pg), "click" ->
	// "pyautogui.click" (from pyautogui import click).
	alias map[string]string
	// star lists modules imported with "from M import *".
	star []string
}

func (p *pyParser) next() token { t := p.toks[p.i]; p.i = min(p.i+1, len(p.toks)-1); return t }
func (p *pyParser) peek() token { return p.toks[p.i] }

func (p *pyParser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tPunct && t.text == s
}

func (p *pyParser) isName(s string) bool {
	t := p.peek()
	return t.kind == tName && t.text == s
}

// statements parses the whole script into calls.
func (p *pyParser) statements() ([]pyCall, error) {
	var out []pyCall
	for {
		t := p.peek()
		switch t.kind {
		case tEOF:
			return out, nil
		case tSep:
			p.next()
			continue
		}
		c, err := p.statement()
		if err != nil {
			return nil, err
		}
		if c.name != "" {
			out = append(out, c)
		}
		if t := p.peek(); t.kind != tSep && t.kind != tEOF {
			return nil, fmt.Errorf("unexpected %s at offset %d", describe(t), t.pos)
		}
	}
}

func describe(t token) string {
	switch t.kind {
	case tName:
		return "name " + t.text
	case tNum:
		return "number"
	case tStr:
		return "string"
	case tPunct:
		return strconv.Quote(t.text)
	case tSep:
		return "end of statement"
	}
	return "end of input"
}

func (p *pyParser) skipStatement() {
	for t := p.peek(); t.kind != tSep && t.kind != tEOF; t = p.peek() {
		p.next()
	}
}

// resolve rewrites a dotted name through the script's imports:
// pg.click -> pyautogui.click after "import pyautogui as pg", click ->
// pyautogui.click after "from pyautogui import click" or "... import *".
func (p *pyParser) resolve(name string) string {
	head, rest, dotted := strings.Cut(name, ".")
	if to, ok := p.alias[head]; ok {
		if dotted {
			return to + "." + rest
		}
		return to
	}
	if !dotted && name != "print" {
		for _, m := range p.star {
			if m == "pyautogui" {
				return m + "." + name
			}
		}
	}
	return name
}

// importStatement records the names an import binds: "import a.b as c",
// "from m import x as y, z", "from m import (x, y)", "from m import *".
// Whatever it does not understand it skips, as before imports were read.
func (p *pyParser) importStatement(kw string) {
	defer p.skipStatement()
	if p.alias == nil {
		p.alias = map[string]string{}
	}
	// asName reads an optional "as NAME".
	asName := func() (string, bool) {
		if !p.isName("as") {
			return "", true
		}
		p.next()
		if t := p.peek(); t.kind == tName && !strings.Contains(t.text, ".") {
			p.next()
			return t.text, true
		}
		return "", false
	}
	if kw == "import" {
		for {
			t := p.peek()
			if t.kind != tName {
				return
			}
			p.next()
			as, ok := asName()
			if !ok {
				return
			}
			if as != "" {
				p.alias[as] = t.text
			} else {
				delete(p.alias, strings.SplitN(t.text, ".", 2)[0]) // "import pyautogui" rebinds the name
			}
			if !p.isPunct(",") {
				return
			}
			p.next()
		}
	}
	mod := p.peek()
	if mod.kind != tName {
		return
	}
	p.next()
	if !p.isName("import") {
		return
	}
	p.next()
	if p.isPunct("*") {
		p.next()
		p.star = append(p.star, mod.text)
		return
	}
	paren := p.isPunct("(")
	if paren {
		p.next()
	}
	for {
		t := p.peek()
		if t.kind != tName || strings.Contains(t.text, ".") {
			return
		}
		p.next()
		as, ok := asName()
		if !ok {
			return
		}
		if as == "" {
			as = t.text
		}
		p.alias[as] = mod.text + "." + t.text
		if !p.isPunct(",") {
			break
		}
		p.next()
		if paren && p.isPunct(")") {
			break
		}
	}
	if paren && p.isPunct(")") {
		p.next()
	}
}

func (p *pyParser) statement() (pyCall, error) {
	t := p.next()
	if t.kind != tName {
		return pyCall{}, fmt.Errorf("unexpected %s at offset %d", describe(t), t.pos)
	}
	if t.text == "import" || t.text == "from" {
		p.importStatement(t.text)
		return pyCall{}, nil
	}
	if p.isPunct("=") {
		// Settings such as pyautogui.FAILSAFE = False change nothing here.
		if strings.HasPrefix(p.resolve(t.text), "pyautogui.") {
			p.skipStatement()
			return pyCall{}, nil
		}
		return pyCall{}, fmt.Errorf("assignment to %s is not supported", t.text)
	}
	if !p.isPunct("(") {
		return pyCall{name: t.text}, nil
	}
	p.next()
	c := pyCall{name: p.resolve(t.text), call: true}
	for !p.isPunct(")") {
		if n := p.peek(); n.kind == tName && p.toks[p.i+1].kind == tPunct && p.toks[p.i+1].text == "=" {
			p.next()
			p.next()
			v, err := p.value(0)
			if err != nil {
				return c, err
			}
			c.kwargs = append(c.kwargs, kwarg{name: n.text, val: v})
		} else {
			if len(c.kwargs) > 0 {
				return c, fmt.Errorf("positional argument after keyword argument at offset %d in call to %s", n.pos, t.text)
			}
			v, err := p.value(0)
			if err != nil {
				return c, err
			}
			c.args = append(c.args, v)
		}
		if p.isPunct(",") {
			p.next()
			continue
		}
		if !p.isPunct(")") {
			n := p.peek()
			return c, fmt.Errorf("unexpected %s at offset %d in call to %s", describe(n), n.pos, t.text)
		}
	}
	p.next()
	return c, nil
}

// maxDepth bounds the nesting of brackets and signs, so that hostile input
// cannot exhaust the stack.
const maxDepth = 64

// value parses an expression: sums and differences of products and
// quotients of numbers, or strings joined by +.
func (p *pyParser) value(depth int) (pyVal, error) {
	v, err := p.product(depth)
	if err != nil {
		return v, err
	}
	for p.isPunct("+") || p.isPunct("-") {
		op := p.next()
		w, err := p.product(depth)
		if err != nil {
			return w, err
		}
		switch {
		case v.kind == pyNum && w.kind == pyNum && op.text == "+":
			v.num += w.num
		case v.kind == pyNum && w.kind == pyNum:
			v.num -= w.num
		case v.kind == pyStr && w.kind == pyStr && op.text == "+":
			v.str += w.str
		default:
			return pyVal{}, fmt.Errorf("cannot compute %s %s %s at offset %d", v, op.text, w, op.pos)
		}
	}
	return v, nil
}

func (p *pyParser) product(depth int) (pyVal, error) {
	v, err := p.unary(depth)
	if err != nil {
		return v, err
	}
	for p.isPunct("*") || p.isPunct("/") {
		op := p.next()
		w, err := p.unary(depth)
		if err != nil {
			return w, err
		}
		if v.kind != pyNum || w.kind != pyNum || (op.text == "/" && w.num == 0) {
			return pyVal{}, fmt.Errorf("cannot compute %s %s %s at offset %d", v, op.text, w, op.pos)
		}
		if op.text == "*" {
			v.num *= w.num
		} else {
			v.num /= w.num
		}
	}
	return v, nil
}

func (p *pyParser) unary(depth int) (pyVal, error) {
	if depth > maxDepth {
		return pyVal{}, fmt.Errorf("nested deeper than %d at offset %d", maxDepth, p.peek().pos)
	}
	if p.isPunct("-") || p.isPunct("+") {
		t := p.next()
		v, err := p.unary(depth + 1)
		if err != nil || v.kind != pyNum {
			return pyVal{}, fmt.Errorf("bad signed number at offset %d", t.pos)
		}
		if t.text == "-" {
			v.num = -v.num
		}
		return v, nil
	}
	return p.atom(depth)
}

func (p *pyParser) atom(depth int) (pyVal, error) {
	t := p.next()
	switch t.kind {
	case tNum:
		return pyVal{kind: pyNum, num: t.num}, nil
	case tStr:
		s := t.str
		for p.peek().kind == tStr { // adjacent literals concatenate
			s += p.next().str
		}
		return pyVal{kind: pyStr, str: s}, nil
	case tName:
		switch t.text {
		case "True", "False":
			return pyVal{kind: pyBool, b: t.text == "True"}, nil
		case "None":
			return pyVal{}, nil
		}
		return pyVal{}, fmt.Errorf("variable %s is not supported at offset %d", t.text, t.pos)
	case tPunct:
		switch t.text {
		case "(", "[":
			closer := map[string]string{"(": ")", "[": "]"}[t.text]
			var l []pyVal
			comma := false
			for !p.isPunct(closer) {
				v, err := p.value(depth + 1)
				if err != nil {
					return pyVal{}, err
				}
				l = append(l, v)
				if p.isPunct(",") {
					p.next()
					comma = true
					continue
				}
				if !p.isPunct(closer) {
					n := p.peek()
					return pyVal{}, fmt.Errorf("unexpected %s at offset %d", describe(n), n.pos)
				}
			}
			p.next()
			if t.text == "(" && len(l) == 1 && !comma {
				return l[0], nil // (x) is x; (x,) is a tuple
			}
			return pyVal{kind: pyList, list: l}, nil
		}
	}
	return pyVal{}, fmt.Errorf("unexpected %s at offset %d", describe(t), t.pos)
}
