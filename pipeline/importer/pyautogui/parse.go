package pyautogui

import (
	"fmt"
	"strings"
)

// valKind is the type of a literal argument.
type valKind int

const (
	vNum valKind = iota
	vStr
	vList // list or tuple
	vBool
	vNone
)

type value struct {
	kind valKind
	num  float64
	str  string
	list []value
	b    bool
}

type call struct {
	name   string // dotted, e.g. "pyautogui.click"
	args   []value
	kwargs map[string]value
}

// arg returns positional argument i or keyword name.
func (c *call) arg(i int, name string) (value, bool) {
	if v, ok := c.kwargs[name]; ok {
		return v, true
	}
	if i >= 0 && i < len(c.args) {
		return c.args[i], true
	}
	return value{}, false
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) isPunct(s string) bool { t := p.peek(); return t.kind == tPunct && t.text == s }

func (p *parser) expect(s string) error {
	if !p.isPunct(s) {
		return fmt.Errorf("expected %q", s)
	}
	p.next()
	return nil
}

// statements parses the script into the calls it makes, skipping imports
// and assignments (pyautogui.PAUSE = 0.5).
func (p *parser) statements() ([]call, error) {
	var out []call
	for {
		for p.isPunct("\n") {
			p.next()
		}
		if p.peek().kind == tEOF {
			return out, nil
		}
		t := p.peek()
		if t.kind != tName {
			return nil, fmt.Errorf("statement starts with %q", t.text)
		}
		if t.text == "import" || t.text == "from" {
			for !p.isPunct("\n") && p.peek().kind != tEOF {
				if tk := p.next(); tk.kind != tName && !(tk.kind == tPunct && (tk.text == "," || tk.text == ".")) {
					return nil, fmt.Errorf("bad import")
				}
			}
			continue
		}
		name, err := p.dotted()
		if err != nil {
			return nil, err
		}
		switch {
		case p.isPunct("="):
			p.next()
			if _, err := p.expr(0); err != nil {
				return nil, err
			}
		case p.isPunct("("):
			c, err := p.call(name)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		default:
			return nil, fmt.Errorf("%s is not a call", name)
		}
		if !p.isPunct("\n") && p.peek().kind != tEOF {
			return nil, fmt.Errorf("junk after %s", name)
		}
	}
}

func (p *parser) dotted() (string, error) {
	t := p.next()
	if t.kind != tName {
		return "", fmt.Errorf("expected a name")
	}
	name := t.text
	for p.isPunct(".") {
		p.next()
		t := p.next()
		if t.kind != tName {
			return "", fmt.Errorf("expected a name after '.'")
		}
		name += "." + t.text
	}
	return name, nil
}

func (p *parser) call(name string) (call, error) {
	c := call{name: name, kwargs: map[string]value{}}
	p.next() // (
	for !p.isPunct(")") {
		if t := p.peek(); t.kind == tName && p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == tPunct && p.toks[p.pos+1].text == "=" {
			p.pos += 2
			v, err := p.expr(0)
			if err != nil {
				return c, err
			}
			c.kwargs[t.text] = v
		} else {
			if len(c.kwargs) > 0 {
				return c, fmt.Errorf("positional argument after keyword")
			}
			v, err := p.expr(0)
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
			return c, fmt.Errorf("expected ',' or ')' in %s(...)", name)
		}
	}
	p.next()
	return c, nil
}

const maxDepth = 32

// expr parses a literal: number (with sign and simple + or - arithmetic),
// strings (adjacent ones concatenated), lists, tuples, True, False, None.
func (p *parser) expr(depth int) (value, error) {
	v, err := p.term(depth)
	if err != nil {
		return v, err
	}
	for (p.isPunct("+") || p.isPunct("-")) && v.kind == vNum {
		op := p.next().text
		w, err := p.term(depth)
		if err != nil || w.kind != vNum {
			return v, fmt.Errorf("bad arithmetic")
		}
		if op == "+" {
			v.num += w.num
		} else {
			v.num -= w.num
		}
	}
	return v, nil
}

func (p *parser) term(depth int) (value, error) {
	if depth > maxDepth {
		return value{}, fmt.Errorf("nested too deep")
	}
	t := p.next()
	switch {
	case t.kind == tNum:
		return value{kind: vNum, num: t.num}, nil
	case t.kind == tPunct && (t.text == "-" || t.text == "+"):
		v, err := p.term(depth + 1)
		if err != nil || v.kind != vNum {
			return v, fmt.Errorf("bad sign")
		}
		if t.text == "-" {
			v.num = -v.num
		}
		return v, nil
	case t.kind == tStr:
		s := t.text
		for p.peek().kind == tStr {
			s += p.next().text
		}
		return value{kind: vStr, str: s}, nil
	case t.kind == tName:
		switch t.text {
		case "True", "False":
			return value{kind: vBool, b: t.text == "True"}, nil
		case "None":
			return value{kind: vNone}, nil
		}
		return value{}, fmt.Errorf("variable %s", t.text)
	case t.kind == tPunct && (t.text == "[" || t.text == "("):
		closer := map[string]string{"[": "]", "(": ")"}[t.text]
		var items []value
		for !p.isPunct(closer) {
			v, err := p.expr(depth + 1)
			if err != nil {
				return v, err
			}
			items = append(items, v)
			if p.isPunct(",") {
				p.next()
				continue
			}
			if !p.isPunct(closer) {
				return value{}, fmt.Errorf("expected ',' or %q", closer)
			}
		}
		p.next()
		if t.text == "(" && len(items) == 1 {
			return items[0], nil // parenthesised expression
		}
		return value{kind: vList, list: items}, nil
	}
	return value{}, fmt.Errorf("unexpected %q", strings.TrimSpace(t.text))
}
