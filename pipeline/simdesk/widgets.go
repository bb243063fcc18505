package simdesk

import (
	"image"
	"unicode/utf8"
)

// fieldOffset returns the first visible rune of a field that shows capacity
// runes, keeping the caret in view.
func fieldOffset(f *Field, capacity int, focused bool) int {
	n := utf8.RuneCountInString(f.Text)
	if !focused || capacity <= 0 || n <= capacity {
		return 0
	}
	c := min(max(f.Cursor, 0), n)
	if c > capacity {
		return c - capacity
	}
	return 0
}

// fieldTextX is where a field's text starts.
func fieldTextX(r image.Rectangle) int { return r.Min.X + 6 }

// textField adds a single-line text input with its visible text, selection
// and caret.
func textField(parent *Node, id, name string, f *Field, r image.Rectangle, focused bool) *Node {
	n := parent.add(&Node{ID: id, Role: RoleTextField, Name: name, Value: f.Text, Rect: r, States: StEditable})
	if focused {
		n.States |= StFocused
	}
	capacity := (r.Dx() - 12) / charW
	off := fieldOffset(f, capacity, focused)
	runes := []rune(f.Text)
	vis := string(runes[min(off, len(runes)):min(off+capacity, len(runes))])
	x0 := fieldTextX(r)
	ty := r.Min.Y + (r.Dy()-charH)/2
	if f.All && f.Text != "" {
		n.States |= StSelected
		n.add(&Node{Role: RolePanel, Rect: rect(x0-1, ty-1, textWidth(vis)+2, charH+2), Style: cAccentLight, States: stDrawOnly})
	}
	n.text(rect(x0, ty, r.Max.X-x0-4, charH), vis, cText)
	if focused && !f.All {
		c := min(max(f.Cursor, 0), len(runes))
		n.add(&Node{Role: RoleCaret, Rect: rect(x0+(c-off)*charW, ty-1, 1, charH+2), States: stDrawOnly})
	}
	return n
}

// clickField places a field's caret where its widget was clicked; double
// and triple clicks select everything.
func clickField(f *Field, n *Node, ev ptrEvent, focusedBefore bool) {
	switch ev.kind {
	case "double_click", "triple_click":
		f.clamp()
		f.All = f.Text != ""
		return
	}
	capacity := (n.Rect.Dx() - 12) / charW
	f.clickAt(ev.p.X, fieldTextX(n.Rect), fieldOffset(f, capacity, focusedBefore))
}

// button adds a push button.
func button(parent *Node, id, name string, r image.Rectangle, style uint8) *Node {
	return parent.add(&Node{ID: id, Role: RoleButton, Name: name, Rect: r, Style: style})
}

// scrollBar adds a vertical scroll bar for a view of visible rows out of
// total, first row top.
func scrollBar(parent *Node, id string, r image.Rectangle, top, visible, total int) {
	if total <= visible || visible <= 0 {
		return
	}
	sb := parent.add(&Node{ID: id, Role: RoleScrollBar, Name: "Scroll bar", Value: itoa(top), Rect: r})
	h := max(r.Dy()*visible/total, 16)
	y := r.Min.Y + (r.Dy()-h)*top/max(total-visible, 1)
	sb.add(&Node{Role: RolePanel, Rect: image.Rect(r.Min.X+2, y, r.Max.X-2, y+h), Style: cBorder, States: stDrawOnly})
}

// scrollBarClick pages up or down depending on which side of the thumb was
// clicked.
func scrollBarClick(n *Node, p image.Point, top, visible, total int) int {
	if total <= visible {
		return 0
	}
	h := max(n.Rect.Dy()*visible/total, 16)
	y := n.Rect.Min.Y + (n.Rect.Dy()-h)*top/max(total-visible, 1)
	switch {
	case p.Y < y:
		return max(top-visible, 0)
	case p.Y >= y+h:
		return min(top+visible, total-visible)
	}
	return top
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	neg := i < 0
	if neg {
		i = -i
	}
	var b [20]byte
	p := len(b)
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		p--
		b[p] = '-'
	}
	return string(b[p:])
}

// clampScroll keeps a scroll offset within a list of total rows showing
// visible rows.
func clampScroll(top, visible, total int) int {
	return min(max(top, 0), max(total-visible, 0))
}
