package sheet

import (
	"fmt"
	"math"
	"strings"
)

// Evaluator computes cell values with memoisation and cycle detection; one
// evaluator serves one unchanged sheet (a frame, a judge call).
type Evaluator struct {
	s     *Sheet
	memo  map[int]Value
	stack map[int]bool
}

// Evaluator returns a fresh evaluator over s.
func (s *Sheet) Evaluator() *Evaluator {
	return &Evaluator{s: s, memo: map[int]Value{}, stack: map[int]bool{}}
}

// Value evaluates cell (row, col).
func (e *Evaluator) Value(row, col int) Value {
	raw := e.s.Raw(row, col)
	if raw == "" {
		return Value{}
	}
	if !strings.HasPrefix(raw, "=") {
		if n, ok := ParseNumber(raw); ok {
			return Value{Num: n, IsNum: true}
		}
		return Value{Text: raw}
	}
	key := row*MaxCols + col
	if v, ok := e.memo[key]; ok {
		return v
	}
	if e.stack[key] || len(e.stack) > 400 {
		return Value{Err: "#CYCLE!"}
	}
	e.stack[key] = true
	v := e.formula(raw[1:])
	delete(e.stack, key)
	e.memo[key] = v
	return v
}

// EvalFormula evaluates a formula (without the leading "=") against the
// sheet, as if typed into a fresh cell.
func (e *Evaluator) EvalFormula(src string) Value { return e.formula(src) }

func (e *Evaluator) formula(src string) Value {
	p := &parser{src: src, e: e}
	v := p.expr()
	p.space()
	if p.err == "" && p.pos < len(p.src) {
		p.fail("#ERROR!")
	}
	if p.err != "" {
		return Value{Err: p.err}
	}
	if v.IsNum && (math.IsNaN(v.Num) || math.IsInf(v.Num, 0)) {
		return Value{Err: "#NUM!"}
	}
	return v
}

// parser is a recursive-descent evaluator: it computes while it parses, so
// there is no syntax tree to keep.
type parser struct {
	src   string
	pos   int
	err   string
	e     *Evaluator
	depth int
}

func (p *parser) fail(code string) {
	if p.err == "" {
		p.err = code
	}
}

func (p *parser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *parser) peek() byte {
	p.space()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *parser) expr() Value {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 64 {
		p.fail("#ERROR!")
		return Value{}
	}
	v := p.term()
	for p.err == "" {
		op := p.peek()
		if op != '+' && op != '-' {
			break
		}
		p.pos++
		w := p.term()
		v = p.arith(op, v, w)
	}
	return v
}

func (p *parser) term() Value {
	v := p.unary()
	for p.err == "" {
		op := p.peek()
		if op != '*' && op != '/' {
			break
		}
		p.pos++
		w := p.unary()
		v = p.arith(op, v, w)
	}
	return v
}

func (p *parser) unary() Value {
	switch p.peek() {
	case '-':
		p.pos++
		v := p.unary()
		return p.arith('-', Value{IsNum: true}, v)
	case '+':
		p.pos++
		return p.unary()
	}
	return p.primary()
}

// num coerces a value for arithmetic: empty is 0, text is #VALUE!.
func (p *parser) num(v Value) float64 {
	switch {
	case v.Err != "":
		p.fail(v.Err)
	case v.IsNum:
		return v.Num
	case v.Text != "":
		if n, ok := ParseNumber(v.Text); ok {
			return n
		}
		p.fail("#VALUE!")
	}
	return 0
}

func (p *parser) arith(op byte, a, b Value) Value {
	x, y := p.num(a), p.num(b)
	if p.err != "" {
		return Value{}
	}
	switch op {
	case '+':
		return Value{Num: x + y, IsNum: true}
	case '-':
		return Value{Num: x - y, IsNum: true}
	case '*':
		return Value{Num: x * y, IsNum: true}
	}
	if y == 0 {
		p.fail("#DIV/0!")
		return Value{}
	}
	return Value{Num: x / y, IsNum: true}
}

func isLetter(c byte) bool { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

func (p *parser) primary() Value {
	c := p.peek()
	switch {
	case c == '(':
		p.pos++
		v := p.expr()
		if p.peek() != ')' {
			p.fail("#ERROR!")
			return Value{}
		}
		p.pos++
		return v
	case c == '"':
		end := strings.IndexByte(p.src[p.pos+1:], '"')
		if end < 0 {
			p.fail("#ERROR!")
			return Value{}
		}
		t := p.src[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		return Value{Text: t}
	case isDigit(c) || c == '.':
		start := p.pos
		for p.pos < len(p.src) && (isDigit(p.src[p.pos]) || p.src[p.pos] == '.') {
			p.pos++
		}
		n, ok := ParseNumber(p.src[start:p.pos])
		if !ok {
			p.fail("#ERROR!")
			return Value{}
		}
		return Value{Num: n, IsNum: true}
	case isLetter(c) || c == '$':
		start := p.pos
		for p.pos < len(p.src) && (isLetter(p.src[p.pos]) || isDigit(p.src[p.pos]) || p.src[p.pos] == '$') {
			p.pos++
		}
		word := strings.ToUpper(p.src[start:p.pos])
		if p.peek() == '(' {
			p.pos++
			return p.call(word)
		}
		row, col, err := ParseRef(word)
		if err != nil {
			p.fail("#NAME?")
			return Value{}
		}
		if p.peek() == ':' {
			p.fail("#VALUE!") // a range outside a function call
			return Value{}
		}
		return p.e.Value(row, col)
	}
	p.fail("#ERROR!")
	return Value{}
}

// args parses a function's argument list; ranges expand to their cells.
// Each argument is a list of values plus whether it came from a range
// (ranges skip text and empty cells, direct arguments do not).
func (p *parser) args() ([][]Value, []bool) {
	var out [][]Value
	var fromRange []bool
	if p.peek() == ')' {
		p.pos++
		return out, fromRange
	}
	for p.err == "" {
		save := p.pos
		if vs, ok := p.tryRange(); ok {
			out = append(out, vs)
			fromRange = append(fromRange, true)
		} else {
			p.pos = save
			out = append(out, []Value{p.expr()})
			fromRange = append(fromRange, false)
		}
		switch p.peek() {
		case ',', ';':
			p.pos++
			continue
		case ')':
			p.pos++
			return out, fromRange
		}
		p.fail("#ERROR!")
	}
	return out, fromRange
}

// tryRange parses "A1:B3" and returns the values in it.
func (p *parser) tryRange() ([]Value, bool) {
	p.space()
	start := p.pos
	for p.pos < len(p.src) && (isLetter(p.src[p.pos]) || isDigit(p.src[p.pos]) || p.src[p.pos] == '$') {
		p.pos++
	}
	r1, c1, err := ParseRef(p.src[start:p.pos])
	if err != nil || p.peek() != ':' {
		return nil, false
	}
	p.pos++
	p.space()
	start = p.pos
	for p.pos < len(p.src) && (isLetter(p.src[p.pos]) || isDigit(p.src[p.pos]) || p.src[p.pos] == '$') {
		p.pos++
	}
	r2, c2, err := ParseRef(p.src[start:p.pos])
	if err != nil {
		p.fail("#REF!")
		return nil, true
	}
	if r1 > r2 {
		r1, r2 = r2, r1
	}
	if c1 > c2 {
		c1, c2 = c2, c1
	}
	var vs []Value
	for r := r1; r <= r2; r++ {
		for c := c1; c <= c2; c++ {
			vs = append(vs, p.e.Value(r, c))
		}
	}
	return vs, true
}

func (p *parser) call(name string) Value {
	args, fromRange := p.args()
	if p.err != "" {
		return Value{}
	}
	// Collect the numbers the aggregate functions work on.
	var nums []float64
	for i, a := range args {
		for _, v := range a {
			switch {
			case v.Err != "":
				p.fail(v.Err)
				return Value{}
			case v.IsNum:
				nums = append(nums, v.Num)
			case !fromRange[i] && v.Text != "":
				n, ok := ParseNumber(v.Text)
				if !ok {
					p.fail("#VALUE!")
					return Value{}
				}
				nums = append(nums, n)
			}
		}
	}
	num := func(n float64) Value { return Value{Num: n, IsNum: true} }
	switch name {
	case "SUM":
		t := 0.0
		for _, n := range nums {
			t += n
		}
		return num(t)
	case "AVERAGE", "AVG", "MEAN":
		if len(nums) == 0 {
			p.fail("#DIV/0!")
			return Value{}
		}
		t := 0.0
		for _, n := range nums {
			t += n
		}
		return num(t / float64(len(nums)))
	case "MIN", "MAX":
		if len(nums) == 0 {
			return num(0)
		}
		m := nums[0]
		for _, n := range nums[1:] {
			if (name == "MIN") == (n < m) {
				m = n
			}
		}
		return num(m)
	case "COUNT":
		return num(float64(len(nums)))
	case "ABS":
		if len(args) != 1 || len(nums) != 1 {
			p.fail("#VALUE!")
			return Value{}
		}
		return num(math.Abs(nums[0]))
	case "ROUND":
		if len(args) < 1 || len(args) > 2 || len(nums) != len(args) {
			p.fail("#VALUE!")
			return Value{}
		}
		digits := 0.0
		if len(nums) == 2 {
			digits = math.Trunc(nums[1])
		}
		if digits < -10 || digits > 10 {
			p.fail("#NUM!")
			return Value{}
		}
		f := math.Pow(10, digits)
		return num(math.Round(nums[0]*f) / f)
	}
	p.fail("#NAME?")
	return Value{}
}

// Functions lists the formula functions the sheet understands, for
// knowledge documents and validators.
var Functions = []string{"SUM", "AVERAGE", "MIN", "MAX", "COUNT", "ROUND", "ABS"}

// CheckFormula reports whether src (without "=") parses with only known
// functions, without evaluating references.
func CheckFormula(src string) error {
	v := (&Sheet{}).Evaluator().EvalFormula(src)
	switch v.Err {
	case "", "#DIV/0!", "#VALUE!", "#NUM!":
		return nil
	}
	return fmt.Errorf("formula =%s: %s", src, v.Err)
}
