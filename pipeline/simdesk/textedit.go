package simdesk

import (
	"strings"
	"unicode/utf8"
)

// maxLines bounds a buffer, and maxLineRunes a line, so typing can never
// grow state without limit.
const (
	maxLines     = 2000
	maxLineRunes = 2000
	maxFieldRune = 500
)

func (f *Field) clamp() {
	n := utf8.RuneCountInString(f.Text)
	f.Cursor = min(max(f.Cursor, 0), n)
}

// SetText replaces the text and puts the caret at its end.
func (f *Field) SetText(s string) {
	f.Text, f.All = s, false
	f.Cursor = utf8.RuneCountInString(s)
}

// insert types s at the caret (replacing the text when all is selected).
func (f *Field) insert(s string) {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if f.All {
		f.Text, f.Cursor, f.All = "", 0, false
	}
	f.clamp()
	r := []rune(f.Text)
	add := []rune(s)
	if len(r)+len(add) > maxFieldRune {
		add = add[:max(0, maxFieldRune-len(r))]
	}
	r = append(r[:f.Cursor], append(add, r[f.Cursor:]...)...)
	f.Text = string(r)
	f.Cursor += len(add)
}

// key applies an editing key; it reports whether the key was an editing key.
func (f *Field) key(k Key) bool {
	f.clamp()
	r := []rune(f.Text)
	switch k.Combo() {
	case "backspace", "delete":
		if f.All {
			f.Text, f.Cursor, f.All = "", 0, false
			return true
		}
		if k.Name == "backspace" && f.Cursor > 0 {
			r = append(r[:f.Cursor-1], r[f.Cursor:]...)
			f.Cursor--
		} else if k.Name == "delete" && f.Cursor < len(r) {
			r = append(r[:f.Cursor], r[f.Cursor+1:]...)
		}
		f.Text = string(r)
	case "left":
		if f.All {
			f.Cursor = 0
		} else if f.Cursor > 0 {
			f.Cursor--
		}
		f.All = false
	case "right":
		if f.All {
			f.Cursor = len(r)
		} else if f.Cursor < len(r) {
			f.Cursor++
		}
		f.All = false
	case "home", "up":
		f.Cursor, f.All = 0, false
	case "end", "down":
		f.Cursor, f.All = len(r), false
	case "ctrl+a":
		f.All = len(r) > 0
	case "ctrl+backspace":
		f.Text, f.Cursor, f.All = string(r[f.Cursor:]), 0, false
	default:
		return false
	}
	return true
}

// clickAt places the caret at the character boundary nearest to pixel x,
// for a field whose text starts at pixel x0 and is scrolled by off runes.
func (f *Field) clickAt(x, x0, off int) {
	f.clamp()
	col := off + (x-x0+charW/2)/charW
	f.Cursor = min(max(col, 0), utf8.RuneCountInString(f.Text))
	f.All = false
}

// newBuffer splits text into a buffer with the caret at the start.
func newBuffer(text string) Buffer {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[:maxLines]
	}
	return Buffer{Lines: lines}
}

// Text joins the buffer's lines.
func (b *Buffer) Text() string { return strings.Join(b.Lines, "\n") }

func (b *Buffer) clamp() {
	if len(b.Lines) == 0 {
		b.Lines = []string{""}
	}
	b.Line = min(max(b.Line, 0), len(b.Lines)-1)
	b.Col = min(max(b.Col, 0), utf8.RuneCountInString(b.Lines[b.Line]))
	b.Sel = min(max(b.Sel, 0), utf8.RuneCountInString(b.Lines[b.Line])-b.Col)
	b.Top = min(max(b.Top, 0), len(b.Lines)-1)
}

// selected is the text shift+end selected, or "".
func (b *Buffer) selected() string {
	b.clamp()
	return string([]rune(b.Lines[b.Line])[b.Col : b.Col+b.Sel])
}

// dropSel deletes the text shift+end selected; it reports whether there
// was any.
func (b *Buffer) dropSel() bool {
	b.clamp()
	if b.Sel == 0 {
		return false
	}
	line := []rune(b.Lines[b.Line])
	b.Lines[b.Line] = string(append(line[:b.Col:b.Col], line[b.Col+b.Sel:]...))
	b.Sel = 0
	return true
}

// Offset returns the caret as a rune offset into Text().
func (b *Buffer) Offset() int {
	b.clamp()
	off := 0
	for i := 0; i < b.Line; i++ {
		off += utf8.RuneCountInString(b.Lines[i]) + 1
	}
	return off + b.Col
}

// setOffset moves the caret to a rune offset into Text().
func (b *Buffer) setOffset(off int) {
	b.clamp()
	for i, l := range b.Lines {
		n := utf8.RuneCountInString(l)
		if off <= n || i == len(b.Lines)-1 {
			b.Line, b.Col = i, min(max(off, 0), n)
			return
		}
		off -= n + 1
	}
}

// clearAll empties a fully selected buffer before an edit replaces it.
func (b *Buffer) clearAll() {
	if b.All {
		b.Lines, b.Line, b.Col, b.All, b.Top = []string{""}, 0, 0, false, 0
	}
}

// insert types s at the caret; "\n" splits lines. It reports whether the
// text changed.
func (b *Buffer) insert(s string) bool {
	s = strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
			return -1
		}
		if r == '\t' {
			return ' '
		}
		return r
	}, s)
	if s == "" {
		return false
	}
	b.clearAll()
	b.dropSel()
	b.clamp()
	line := []rune(b.Lines[b.Line])
	head, tail := string(line[:b.Col]), string(line[b.Col:])
	parts := strings.Split(s, "\n")
	if len(b.Lines)+len(parts)-1 > maxLines {
		parts = parts[:max(1, maxLines-len(b.Lines)+1)]
	}
	for i, p := range parts {
		if r := []rune(p); len(r) > maxLineRunes {
			parts[i] = string(r[:maxLineRunes])
		}
	}
	last := len(parts) - 1
	newLines := make([]string, 0, len(parts))
	newLines = append(newLines, head+parts[0])
	newLines = append(newLines, parts[1:]...)
	b.Col = utf8.RuneCountInString(newLines[last])
	newLines[last] += tail
	if r := []rune(newLines[last]); len(r) > maxLineRunes {
		newLines[last] = string(r[:maxLineRunes])
		b.Col = min(b.Col, maxLineRunes)
	}
	b.Lines = append(b.Lines[:b.Line], append(newLines, b.Lines[b.Line+1:]...)...)
	b.Line += last
	return true
}

// key applies an editing or caret key; it reports (handled, changed).
func (b *Buffer) key(k Key, page int) (bool, bool) {
	b.clamp()
	line := []rune(b.Lines[b.Line])
	switch k.Combo() {
	case "shift+end":
		// Selects from the caret to the line's end (a whole line after Go
		// to Line), which typed text then replaces.
		b.All, b.Sel = false, len(line)-b.Col
		return true, false
	case "backspace", "delete":
		if b.dropSel() {
			return true, true
		}
	case "enter", "tab":
		// insert replaces the selection
	default:
		if _, typed := k.char(); !typed {
			b.Sel = 0 // a caret move drops the selection
		}
	}
	switch k.Combo() {
	case "enter":
		return true, b.insert("\n")
	case "tab":
		return true, b.insert("    ")
	case "backspace", "delete":
		if b.All {
			b.clearAll()
			return true, true
		}
		if k.Name == "backspace" {
			if b.Col == 0 && b.Line == 0 {
				return true, false
			}
			b.setOffset(b.Offset() - 1)
		} else if b.Col == len(line) && b.Line == len(b.Lines)-1 {
			return true, false
		}
		b.deleteAtCaret()
		return true, true
	case "left":
		if !b.takeSelection(false) {
			b.setOffset(b.Offset() - 1)
		}
	case "right":
		if !b.takeSelection(true) {
			b.setOffset(b.Offset() + 1)
		}
	case "up", "down", "pageup", "pagedown":
		b.takeSelection(k.Name == "down" || k.Name == "pagedown")
		d := map[string]int{"up": -1, "down": 1, "pageup": -page, "pagedown": page}[k.Name]
		b.Line = min(max(b.Line+d, 0), len(b.Lines)-1)
		b.clamp()
	case "home":
		b.All, b.Col = false, 0
	case "end":
		b.All, b.Col = false, len(line)
	case "ctrl+home":
		b.All, b.Line, b.Col = false, 0, 0
	case "ctrl+end":
		b.All = false
		b.Line = len(b.Lines) - 1
		b.Col = utf8.RuneCountInString(b.Lines[b.Line])
	case "ctrl+a":
		b.All = true
	default:
		return false, false
	}
	return true, false
}

// takeSelection collapses a select-all to the start or end.
func (b *Buffer) takeSelection(end bool) bool {
	if !b.All {
		return false
	}
	b.All = false
	if end {
		b.Line = len(b.Lines) - 1
		b.Col = utf8.RuneCountInString(b.Lines[b.Line])
	} else {
		b.Line, b.Col = 0, 0
	}
	return true
}

// deleteAtCaret removes the rune after the caret (joining lines at a line
// end).
func (b *Buffer) deleteAtCaret() {
	line := []rune(b.Lines[b.Line])
	if b.Col < len(line) {
		b.Lines[b.Line] = string(append(line[:b.Col:b.Col], line[b.Col+1:]...))
		return
	}
	if b.Line+1 < len(b.Lines) {
		b.Lines[b.Line] += b.Lines[b.Line+1]
		b.Lines = append(b.Lines[:b.Line+1], b.Lines[b.Line+2:]...)
	}
}

// scrollTo keeps the caret line within a view of rows lines.
func (b *Buffer) scrollTo(rows int) {
	b.clamp()
	if b.Line < b.Top {
		b.Top = b.Line
	}
	if b.Line >= b.Top+rows {
		b.Top = b.Line - rows + 1
	}
}
