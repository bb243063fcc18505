package action

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The parser turns the tokens of a script into statements whose arguments
// are expressions, evaluated when the statement runs (pyrun.go): a value
// such as pyperclip.paste() depends on what ran before it.

type pyKind int

const (
	pyNone pyKind = iota
	pyNum
	pyStr
	pyBool
	pyList
	pyTween // a pytweening function such as pyautogui.easeInQuad; str holds its name
)

type pyVal struct {
	kind  pyKind
	num   float64
	float bool // a Python float rather than an int (for printing)
	str   string
	b     bool
	list  []pyVal
	tuple bool // a tuple rather than a list (for printing)
}

// String renders the value for error messages.
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
	case pyTween:
		return v.str
	}
	return "None"
}

// pyStrOf is Python's str(v), what print writes.
func pyStrOf(v pyVal) string {
	if v.kind == pyStr {
		return v.str
	}
	return pyRepr(v)
}

// pyRepr is Python's repr(v).
func pyRepr(v pyVal) string {
	switch v.kind {
	case pyNum:
		return pyNumber(v.num, v.float)
	case pyStr:
		return pyStrRepr(v.str)
	case pyBool:
		if v.b {
			return "True"
		}
		return "False"
	case pyList:
		parts := make([]string, len(v.list))
		for i, e := range v.list {
			parts[i] = pyRepr(e)
		}
		if v.tuple {
			if len(parts) == 1 {
				return "(" + parts[0] + ",)"
			}
			return "(" + strings.Join(parts, ", ") + ")"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case pyTween:
		return "<function " + strings.TrimPrefix(v.str, "pyautogui.") + ">"
	}
	return "None"
}

// pyNumber formats a number as Python prints an int or a float.
func pyNumber(f float64, float bool) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case !float && f == math.Trunc(f) && math.Abs(f) < 1e18:
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	a := math.Abs(f)
	if a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// pyStrRepr quotes a string as Python's repr does.
func pyStrRepr(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\' || r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

type exprKind int

const (
	eLit   exprKind = iota
	eName           // a variable or a tween
	eCall           // a call in value position: pyperclip.paste(), platform.system()
	eBinop          // + - * /
	eNeg            // unary minus
	eList           // [a, b] or (a, b)
)

// pyExpr is an expression of the subset.
type pyExpr struct {
	kind   exprKind
	val    pyVal     // eLit
	name   string    // eName as written; eCall resolved through the imports
	full   string    // eName resolved through the imports (pg.linear -> pyautogui.linear)
	args   []*pyExpr // eCall, eList
	kwargs []kwExpr  // eCall
	op     string    // eBinop
	l, r   *pyExpr   // eBinop (l, r), eNeg (l)
	tuple  bool      // eList: a tuple
	pos    int
}

type kwExpr struct {
	name string
	val  *pyExpr
}

type stmtKind int

const (
	sNone    stmtKind = iota
	sCall             // f(...)
	sName             // a bare name: DONE, FAIL, WAIT, or a variable (no effect)
	sAssign           // a = ..., a, b = ...
	sSetting          // pyautogui.X = ... (skipped: settings change nothing here)
)

// pyStmt is one statement of a script.
type pyStmt struct {
	kind    stmtKind
	call    *pyExpr // sCall
	name    string  // sName
	targets []string
	value   *pyExpr // sAssign
	pos     int
}

// pyCall is a call with its arguments evaluated, as the translator reads it.
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

func (p *pyParser) peekAt(k int) token { return p.toks[min(p.i+k, len(p.toks)-1)] }

func (p *pyParser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tPunct && t.text == s
}

func (p *pyParser) isName(s string) bool {
	t := p.peek()
	return t.kind == tName && t.text == s
}

// statements parses the whole script.
func (p *pyParser) statements() ([]pyStmt, error) {
	var out []pyStmt
	for {
		t := p.peek()
		switch t.kind {
		case tEOF:
			return out, nil
		case tSep:
			p.next()
			continue
		}
		st, err := p.statement()
		if err != nil {
			return nil, err
		}
		if st.kind != sNone {
			out = append(out, st)
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

// assignTargets reports the names of an assignment starting at the current
// token ("a = ", "a, b = "), or nil when the statement is not one.
func (p *pyParser) assignTargets() []string {
	var names []string
	for k := 0; ; k += 2 {
		t := p.peekAt(k)
		if t.kind != tName {
			return nil
		}
		names = append(names, t.text)
		n := p.peekAt(k + 1)
		if n.kind == tPunct && n.text == "=" {
			return names
		}
		if n.kind != tPunct || n.text != "," {
			return nil
		}
	}
}

func (p *pyParser) statement() (pyStmt, error) {
	t := p.peek()
	if t.kind != tName {
		return pyStmt{}, fmt.Errorf("unexpected %s at offset %d", describe(t), t.pos)
	}
	if t.text == "import" || t.text == "from" {
		p.next()
		p.importStatement(t.text)
		return pyStmt{}, nil
	}
	if targets := p.assignTargets(); targets != nil {
		if len(targets) == 1 && strings.Contains(targets[0], ".") && strings.HasPrefix(p.resolve(targets[0]), "pyautogui.") {
			// Settings such as pyautogui.FAILSAFE = False change nothing here.
			p.skipStatement()
			return pyStmt{kind: sSetting, pos: t.pos}, nil
		}
		for _, n := range targets {
			if strings.Contains(n, ".") || n == "True" || n == "False" || n == "None" {
				return pyStmt{}, fmt.Errorf("assignment to %s is not supported", n)
			}
		}
		for range targets {
			p.next() // name
			p.next() // "," or "="
		}
		v, err := p.value(0)
		if err != nil {
			return pyStmt{}, err
		}
		return pyStmt{kind: sAssign, targets: targets, value: v, pos: t.pos}, nil
	}
	if n := p.peekAt(1); n.kind != tPunct || n.text != "(" {
		p.next()
		return pyStmt{kind: sName, name: t.text, pos: t.pos}, nil
	}
	p.next()
	c, err := p.callExpr(t)
	if err != nil {
		return pyStmt{}, err
	}
	return pyStmt{kind: sCall, call: c, pos: t.pos}, nil
}

// callExpr parses the arguments of a call to the name t; the current token
// is its "(".
func (p *pyParser) callExpr(t token) (*pyExpr, error) {
	p.next()
	c := &pyExpr{kind: eCall, name: p.resolve(t.text), pos: t.pos}
	for !p.isPunct(")") {
		if n := p.peek(); n.kind == tName && p.peekAt(1).kind == tPunct && p.peekAt(1).text == "=" {
			p.next()
			p.next()
			v, err := p.value(0)
			if err != nil {
				return c, err
			}
			c.kwargs = append(c.kwargs, kwExpr{name: n.text, val: v})
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
// quotients, over literals, names, calls, lists and tuples.
func (p *pyParser) value(depth int) (*pyExpr, error) {
	v, err := p.product(depth)
	if err != nil {
		return nil, err
	}
	for p.isPunct("+") || p.isPunct("-") {
		op := p.next()
		w, err := p.product(depth)
		if err != nil {
			return nil, err
		}
		v = &pyExpr{kind: eBinop, op: op.text, l: v, r: w, pos: op.pos}
	}
	return v, nil
}

func (p *pyParser) product(depth int) (*pyExpr, error) {
	v, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for p.isPunct("*") || p.isPunct("/") {
		op := p.next()
		w, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		v = &pyExpr{kind: eBinop, op: op.text, l: v, r: w, pos: op.pos}
	}
	return v, nil
}

func (p *pyParser) unary(depth int) (*pyExpr, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d at offset %d", maxDepth, p.peek().pos)
	}
	if p.isPunct("-") || p.isPunct("+") {
		t := p.next()
		v, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		if t.text == "+" {
			return &pyExpr{kind: eNeg, op: "+", l: v, pos: t.pos}, nil
		}
		return &pyExpr{kind: eNeg, op: "-", l: v, pos: t.pos}, nil
	}
	return p.atom(depth)
}

func (p *pyParser) atom(depth int) (*pyExpr, error) {
	t := p.next()
	switch t.kind {
	case tNum:
		return &pyExpr{kind: eLit, val: pyVal{kind: pyNum, num: t.num, float: t.float}, pos: t.pos}, nil
	case tStr:
		s := t.str
		for p.peek().kind == tStr { // adjacent literals concatenate
			s += p.next().str
		}
		return &pyExpr{kind: eLit, val: pyVal{kind: pyStr, str: s}, pos: t.pos}, nil
	case tName:
		switch t.text {
		case "True", "False":
			return &pyExpr{kind: eLit, val: pyVal{kind: pyBool, b: t.text == "True"}, pos: t.pos}, nil
		case "None":
			return &pyExpr{kind: eLit, pos: t.pos}, nil
		}
		if p.isPunct("(") {
			return p.callExpr(t)
		}
		return &pyExpr{kind: eName, name: t.text, full: p.resolve(t.text), pos: t.pos}, nil
	case tPunct:
		switch t.text {
		case "(", "[":
			closer := map[string]string{"(": ")", "[": "]"}[t.text]
			l := &pyExpr{kind: eList, tuple: t.text == "(", pos: t.pos}
			comma := false
			for !p.isPunct(closer) {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				l.args = append(l.args, v)
				if p.isPunct(",") {
					p.next()
					comma = true
					continue
				}
				if !p.isPunct(closer) {
					n := p.peek()
					return nil, fmt.Errorf("unexpected %s at offset %d", describe(n), n.pos)
				}
			}
			p.next()
			if t.text == "(" && len(l.args) == 1 && !comma {
				return l.args[0], nil // (x) is x; (x,) is a tuple
			}
			return l, nil
		}
	}
	return nil, fmt.Errorf("unexpected %s at offset %d", describe(t), t.pos)
}
