package notebook

import (
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// The Markdown subset notebooks use: ATX headings, paragraphs, bullet and
// ordered lists (nested by indentation), fenced code, block quotes,
// horizontal rules, pipe tables, and inline code, emphasis, strong emphasis
// and links. Raw HTML is always escaped: prose cannot inject markup or
// scripts into a report.

var (
	reHeading   = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	reFence     = regexp.MustCompile("^( {0,3})(`{3,}|~{3,})[ \t]*([^`]*)$")
	reRule      = regexp.MustCompile(`^ {0,3}([-*_])(?:[ \t]*[-*_]){2,}[ \t]*$`)
	reBullet    = regexp.MustCompile(`^( {0,3})([-*+])( +|$)(.*)$`)
	reOrdered   = regexp.MustCompile(`^( {0,3})(\d{1,9})([.)])( +|$)(.*)$`)
	reQuote     = regexp.MustCompile(`^ {0,3}> ?(.*)$`)
	reTableSep  = regexp.MustCompile(`^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$`)
	reSlugStrip = regexp.MustCompile(`[^a-z0-9]+`)
)

// mdRenderer renders Markdown blocks; it remembers heading ids so that ids
// stay unique across all prose cells of one page.
type mdRenderer struct {
	ids map[string]int
}

func newMarkdown() *mdRenderer { return &mdRenderer{ids: map[string]int{}} }

// Markdown renders src to HTML. It never fails: anything it does not
// recognise is a paragraph of escaped text.
func Markdown(src string) string {
	return newMarkdown().render(src)
}

func (r *mdRenderer) render(src string) string {
	var b strings.Builder
	r.blocks(&b, splitLines(src), false)
	return b.String()
}

func splitLines(src string) []string {
	src = strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		lines[i] = strings.ReplaceAll(l, "\t", "    ")
	}
	return lines
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// startsBlock reports whether line begins a block that interrupts a
// paragraph.
func startsBlock(line string) bool {
	if reHeading.MatchString(line) || reFence.MatchString(line) || reRule.MatchString(line) || reQuote.MatchString(line) {
		return true
	}
	if m := reBullet.FindStringSubmatch(line); m != nil && m[4] != "" {
		return true
	}
	if m := reOrdered.FindStringSubmatch(line); m != nil && m[5] != "" && m[2] == "1" {
		return true
	}
	return false
}

// blocks renders lines as a sequence of blocks. In a tight list item,
// paragraphs are written without <p>.
func (r *mdRenderer) blocks(b *strings.Builder, lines []string, tight bool) {
	for i := 0; i < len(lines); {
		line := lines[i]
		switch {
		case blank(line):
			i++
		case reFence.MatchString(line):
			i = r.fenced(b, lines, i)
		case reHeading.MatchString(line):
			m := reHeading.FindStringSubmatch(line)
			level := len(m[1])
			text := strings.TrimSpace(m[2])
			fmt.Fprintf(b, "<h%d id=\"%s\">%s</h%d>\n", level, r.slug(text), inline(text), level)
			i++
		case reRule.MatchString(line):
			b.WriteString("<hr>\n")
			i++
		case reQuote.MatchString(line):
			var inner []string
			for ; i < len(lines) && reQuote.MatchString(lines[i]); i++ {
				inner = append(inner, reQuote.FindStringSubmatch(lines[i])[1])
			}
			b.WriteString("<blockquote>\n")
			r.blocks(b, inner, false)
			b.WriteString("</blockquote>\n")
		case isListItem(line):
			i = r.list(b, lines, i)
		case i+1 < len(lines) && strings.Contains(line, "|") && reTableSep.MatchString(lines[i+1]) && strings.Contains(lines[i+1], "-"):
			i = r.table(b, lines, i)
		default:
			var para []string
			for ; i < len(lines) && !blank(lines[i]); i++ {
				if len(para) > 0 && startsBlock(lines[i]) {
					break
				}
				para = append(para, strings.TrimSpace(lines[i]))
			}
			text := inline(strings.Join(para, "\n"))
			if tight {
				b.WriteString(text + "\n")
			} else {
				b.WriteString("<p>" + text + "</p>\n")
			}
		}
	}
}

// fenced renders a fenced code block starting at lines[i]; an unclosed
// fence runs to the end, as in CommonMark.
func (r *mdRenderer) fenced(b *strings.Builder, lines []string, i int) int {
	m := reFence.FindStringSubmatch(lines[i])
	indent, fence, info := len(m[1]), m[2], strings.Fields(m[3])
	var body []string
	j := i + 1
	for ; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if strings.HasPrefix(t, fence[:1]) && strings.Trim(t, fence[:1]) == "" && len(t) >= len(fence) {
			j++
			break
		}
		l := lines[j]
		for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
			l = l[1:]
		}
		body = append(body, l)
	}
	class := ""
	if len(info) > 0 {
		class = ` class="language-` + html.EscapeString(info[0]) + `"`
	}
	code := strings.Join(body, "\n")
	if len(body) > 0 {
		code += "\n"
	}
	fmt.Fprintf(b, "<pre><code%s>%s</code></pre>\n", class, html.EscapeString(code))
	return j
}

func isListItem(line string) bool {
	return reBullet.MatchString(line) || reOrdered.MatchString(line)
}

// listMarker returns the marker kind ("-", "*", "+", "." or ")"), the
// ordinal, the column where the item's content starts and its first line.
func listMarker(line string) (kind string, start int, content int, text string, ok bool) {
	if m := reBullet.FindStringSubmatch(line); m != nil {
		w := len(m[3])
		if w == 0 || w > 4 {
			w = 1 // an empty item or code-indented content: content starts one space after the marker
		}
		return m[2], 0, len(m[1]) + 1 + w, m[4], true
	}
	if m := reOrdered.FindStringSubmatch(line); m != nil {
		n, _ := strconv.Atoi(m[2])
		w := len(m[4])
		if w == 0 || w > 4 {
			w = 1
		}
		return m[3], n, len(m[1]) + len(m[2]) + 1 + w, m[5], true
	}
	return "", 0, 0, "", false
}

// list renders a list starting at lines[i]: items of the same marker kind,
// each holding the lines indented at least to its content column (nested
// blocks) and lazy paragraph continuations.
func (r *mdRenderer) list(b *strings.Builder, lines []string, i int) int {
	kind, start, _, _, _ := listMarker(lines[i])
	ordered := kind == "." || kind == ")"
	var items [][]string
	loose := false
	for i < len(lines) {
		k, _, content, text, ok := listMarker(lines[i])
		if !ok || k != kind {
			break
		}
		item := []string{text}
		i++
		sawBlank := false
		for i < len(lines) {
			l := lines[i]
			if blank(l) {
				sawBlank = true
				item = append(item, "")
				i++
				continue
			}
			ind := len(l) - len(strings.TrimLeft(l, " "))
			if ind >= content {
				if sawBlank {
					loose = loose || !isListItem(l[content:])
				}
				item = append(item, l[content:])
				sawBlank = false
				i++
				continue
			}
			if !sawBlank && !startsBlock(l) && !isListItem(l) {
				item = append(item, strings.TrimSpace(l)) // lazy continuation
				i++
				continue
			}
			break
		}
		// Trailing blank lines belong between items, not inside one.
		for len(item) > 0 && blank(item[len(item)-1]) {
			item = item[:len(item)-1]
		}
		if sawBlank && i < len(lines) {
			if k2, _, _, _, ok2 := listMarker(lines[i]); ok2 && k2 == kind {
				loose = true
			}
		}
		items = append(items, item)
	}
	switch {
	case !ordered:
		b.WriteString("<ul>\n")
	case start != 1:
		fmt.Fprintf(b, "<ol start=\"%d\">\n", start)
	default:
		b.WriteString("<ol>\n")
	}
	for _, item := range items {
		b.WriteString("<li>")
		r.blocks(b, item, !loose)
		b.WriteString("</li>\n")
	}
	if ordered {
		b.WriteString("</ol>\n")
	} else {
		b.WriteString("</ul>\n")
	}
	return i
}

func splitRow(line string) []string {
	t := strings.TrimSpace(line)
	t = strings.TrimPrefix(t, "|")
	if strings.HasSuffix(t, "|") && !strings.HasSuffix(t, `\|`) {
		t = t[:len(t)-1]
	}
	var cells []string
	var cur strings.Builder
	for k := 0; k < len(t); k++ {
		switch {
		case t[k] == '\\' && k+1 < len(t) && t[k+1] == '|':
			cur.WriteByte('|')
			k++
		case t[k] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(t[k])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// table renders a pipe table whose header is lines[i].
func (r *mdRenderer) table(b *strings.Builder, lines []string, i int) int {
	head := splitRow(lines[i])
	var align []string
	for _, s := range splitRow(lines[i+1]) {
		switch {
		case strings.HasPrefix(s, ":") && strings.HasSuffix(s, ":"):
			align = append(align, "center")
		case strings.HasSuffix(s, ":"):
			align = append(align, "right")
		case strings.HasPrefix(s, ":"):
			align = append(align, "left")
		default:
			align = append(align, "")
		}
	}
	cell := func(tag string, k int, s string) {
		style := ""
		if k < len(align) && align[k] != "" {
			style = ` style="text-align:` + align[k] + `"`
		}
		fmt.Fprintf(b, "<%s%s>%s</%s>", tag, style, inline(s), tag)
	}
	b.WriteString("<table class=\"md\">\n<thead><tr>")
	for k, h := range head {
		cell("th", k, h)
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	i += 2
	for ; i < len(lines) && !blank(lines[i]) && strings.Contains(lines[i], "|"); i++ {
		b.WriteString("<tr>")
		row := splitRow(lines[i])
		for k := range head {
			s := ""
			if k < len(row) {
				s = row[k]
			}
			cell("td", k, s)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	return i
}

// slug turns heading text into a unique anchor id.
func (r *mdRenderer) slug(text string) string {
	s := strings.Trim(reSlugStrip.ReplaceAllString(strings.ToLower(plain(text)), "-"), "-")
	if s == "" {
		s = "section"
	}
	r.ids[s]++
	if n := r.ids[s]; n > 1 {
		s = fmt.Sprintf("%s-%d", s, n)
	}
	return s
}

// plain strips inline markers, for anchors and titles.
func plain(s string) string {
	return strings.NewReplacer("`", "", "*", "", "[", "", "]", "").Replace(s)
}

// inline renders inline Markdown: code spans, links, emphasis, escapes.
func inline(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case c == '\\' && i+1 < len(rs) && unicode.IsPunct(rs[i+1]) || c == '\\' && i+1 < len(rs) && unicode.IsSymbol(rs[i+1]):
			b.WriteString(html.EscapeString(string(rs[i+1])))
			i += 2
		case c == '`':
			n := run(rs, i, '`')
			if end := findRun(rs, i+n, '`', n); end >= 0 {
				code := string(rs[i+n : end])
				if len(code) > 2 && strings.HasPrefix(code, " ") && strings.HasSuffix(code, " ") && strings.TrimSpace(code) != "" {
					code = code[1 : len(code)-1]
				}
				b.WriteString("<code>" + html.EscapeString(strings.ReplaceAll(code, "\n", " ")) + "</code>")
				i = end + n
			} else {
				b.WriteString(strings.Repeat("`", n))
				i += n
			}
		case c == '[' || c == '!' && i+1 < len(rs) && rs[i+1] == '[':
			open := i
			if c == '!' {
				open++
			}
			text, url, end, ok := link(rs, open)
			if !ok {
				b.WriteString(html.EscapeString(string(rs[i : open+1])))
				i = open + 1
				continue
			}
			fmt.Fprintf(&b, `<a href="%s">%s</a>`, html.EscapeString(safeURL(url)), inline(text))
			i = end
		case c == '<':
			end := -1
			for k := i + 1; k < len(rs) && rs[k] != '<' && rs[k] != ' '; k++ {
				if rs[k] == '>' {
					end = k
					break
				}
			}
			if end > 0 {
				u := string(rs[i+1 : end])
				if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
					fmt.Fprintf(&b, `<a href="%s">%s</a>`, html.EscapeString(u), html.EscapeString(u))
					i = end + 1
					continue
				}
			}
			b.WriteString("&lt;")
			i++
		case c == '*' || c == '_':
			n := run(rs, i, c)
			if n > 3 {
				b.WriteString(strings.Repeat(string(c), n))
				i += n
				continue
			}
			if end, ok := closeEmphasis(rs, i, c, n); ok {
				inner := inline(string(rs[i+n : end]))
				switch n {
				case 1:
					b.WriteString("<em>" + inner + "</em>")
				case 2:
					b.WriteString("<strong>" + inner + "</strong>")
				default:
					b.WriteString("<strong><em>" + inner + "</em></strong>")
				}
				i = end + n
				continue
			}
			b.WriteString(strings.Repeat(string(c), n))
			i += n
		default:
			b.WriteString(html.EscapeString(string(c)))
			i++
		}
	}
	return b.String()
}

// run counts repeats of c from i.
func run(rs []rune, i int, c rune) int {
	n := 0
	for i+n < len(rs) && rs[i+n] == c {
		n++
	}
	return n
}

// findRun finds the next run of exactly n c's from i.
func findRun(rs []rune, i int, c rune, n int) int {
	for i < len(rs) {
		if rs[i] == c {
			m := run(rs, i, c)
			if m == n {
				return i
			}
			i += m
			continue
		}
		i++
	}
	return -1
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// closeEmphasis finds the closer of an emphasis run of n c's opening at i.
// Openers must be followed by non-space, closers preceded by non-space;
// underscores never open or close inside a word (snake_case stays plain).
func closeEmphasis(rs []rune, i int, c rune, n int) (int, bool) {
	after := i + n
	if after >= len(rs) || unicode.IsSpace(rs[after]) {
		return 0, false
	}
	if c == '_' && i > 0 && isWord(rs[i-1]) {
		return 0, false
	}
	for j := after + 1; j < len(rs); j++ {
		if rs[j] == '`' { // skip code spans: emphasis markers inside code are literal
			m := run(rs, j, '`')
			if end := findRun(rs, j+m, '`', m); end >= 0 {
				j = end + m - 1
				continue
			}
		}
		if rs[j] != c {
			continue
		}
		m := run(rs, j, c)
		if m == n && !unicode.IsSpace(rs[j-1]) && !(c == '_' && j+m < len(rs) && isWord(rs[j+m])) {
			return j, true
		}
		j += m - 1
	}
	return 0, false
}

// link parses [text](url "title") starting at the '[' at i.
func link(rs []rune, i int) (text, url string, end int, ok bool) {
	depth := 0
	j := i
	for ; j < len(rs); j++ {
		switch rs[j] {
		case '\\':
			j++
			continue
		case '[':
			depth++
		case ']':
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if j >= len(rs) || j+1 >= len(rs) || rs[j+1] != '(' {
		return "", "", 0, false
	}
	closeParen := -1
	for k := j + 2; k < len(rs); k++ {
		if rs[k] == ')' {
			closeParen = k
			break
		}
	}
	if closeParen < 0 {
		return "", "", 0, false
	}
	target := strings.TrimSpace(string(rs[j+2 : closeParen]))
	if f := strings.Fields(target); len(f) > 0 {
		target = strings.Trim(f[0], "<>")
	}
	return string(rs[i+1 : j]), target, closeParen + 1, true
}

// safeURL keeps http(s), mailto, anchors and relative links; anything else
// (javascript:, data:) becomes "#".
func safeURL(u string) string {
	l := strings.ToLower(strings.TrimSpace(u))
	if k := strings.IndexAny(l, ":/?#"); k >= 0 && l[k] == ':' {
		scheme := l[:k]
		if scheme != "http" && scheme != "https" && scheme != "mailto" {
			return "#"
		}
	}
	return u
}
