package simdesk

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"strconv"
	"unicode/utf8"
)

// Palette indices. Sixteen colours make the screenshot a 4-bit paletted PNG,
// which encodes several times faster than RGBA and is as readable.
const (
	cDesk uint8 = iota
	cBar
	cWin
	cWhite
	cText
	cBorder
	cPanel
	cAccent
	cAccentLight
	cInactive
	cMuted
	cRed
	cGreen
	cYellow
	cGrid
	cDock
)

var palette = color.Palette{
	color.RGBA{0x2e, 0x5e, 0x6e, 0xff}, // desktop
	color.RGBA{0x1f, 0x1f, 0x24, 0xff}, // taskbar
	color.RGBA{0xf0, 0xf0, 0xf0, 0xff}, // window
	color.RGBA{0xff, 0xff, 0xff, 0xff}, // white
	color.RGBA{0x20, 0x20, 0x20, 0xff}, // text
	color.RGBA{0xa0, 0xa0, 0xa0, 0xff}, // border
	color.RGBA{0xe2, 0xe2, 0xe2, 0xff}, // panel
	color.RGBA{0x2f, 0x6f, 0xd6, 0xff}, // accent
	color.RGBA{0xcf, 0xe0, 0xfa, 0xff}, // accent light
	color.RGBA{0x8c, 0x8c, 0x96, 0xff}, // inactive title
	color.RGBA{0x6e, 0x6e, 0x6e, 0xff}, // muted text
	color.RGBA{0xd0, 0x30, 0x30, 0xff}, // red
	color.RGBA{0x2e, 0x9e, 0x4e, 0xff}, // green
	color.RGBA{0xe8, 0xb8, 0x30, 0xff}, // yellow
	color.RGBA{0xd4, 0xd4, 0xd4, 0xff}, // grid lines
	color.RGBA{0x3a, 0x3a, 0x44, 0xff}, // dock button
}

// renderer draws view trees into a reused paletted image and encodes PNGs
// with a reused encoder.
type renderer struct {
	img  *image.Paletted
	rows [16][]byte // one screen row of each colour, copied to fill rects
	enc  *pngWriter
	out  bytes.Buffer
}

func newRenderer(w, h int) *renderer {
	r := &renderer{img: image.NewPaletted(image.Rect(0, 0, w, h), palette)}
	for c := range r.rows {
		row := make([]byte, w)
		for i := range row {
			row[i] = byte(c)
		}
		r.rows[c] = row
	}
	r.enc = newPNGWriter(palette)
	return r
}

// Image renders the current state and returns the frame; it is reused by
// the next call.
func (d *Desktop) Image() *image.Paletted {
	if d.rend == nil || d.rend.img.Rect.Dx() != d.S.Width || d.rend.img.Rect.Dy() != d.S.Height {
		d.rend = newRenderer(d.S.Width, d.S.Height)
	}
	r := d.rend
	r.node(d.View())
	r.cursor(d.S.Mouse.X, d.S.Mouse.Y)
	return r.img
}

// Screenshot renders the current state as PNG bytes (a fresh slice).
func (d *Desktop) Screenshot() ([]byte, error) {
	png, _, err := d.screenshot()
	return png, err
}

// screenshot is Screenshot with the frame it encodes (reused by the next
// render).
func (d *Desktop) screenshot() ([]byte, *image.Paletted, error) {
	img := d.Image()
	r := d.rend
	r.out.Reset()
	if err := r.enc.encode(&r.out, img); err != nil {
		return nil, nil, fmt.Errorf("simdesk: encode png: %w", err)
	}
	return bytes.Clone(r.out.Bytes()), img, nil
}

func (r *renderer) fill(rc image.Rectangle, c uint8) {
	rc = rc.Intersect(r.img.Rect)
	if rc.Empty() {
		return
	}
	w := rc.Dx()
	src := r.rows[c&15][:w]
	for y := rc.Min.Y; y < rc.Max.Y; y++ {
		off := y*r.img.Stride + rc.Min.X
		copy(r.img.Pix[off:off+w], src)
	}
}

func (r *renderer) border(rc image.Rectangle, c uint8, t int) {
	r.fill(image.Rect(rc.Min.X, rc.Min.Y, rc.Max.X, rc.Min.Y+t), c)
	r.fill(image.Rect(rc.Min.X, rc.Max.Y-t, rc.Max.X, rc.Max.Y), c)
	r.fill(image.Rect(rc.Min.X, rc.Min.Y, rc.Min.X+t, rc.Max.Y), c)
	r.fill(image.Rect(rc.Max.X-t, rc.Min.Y, rc.Max.X, rc.Max.Y), c)
}

func (r *renderer) set(x, y int, c uint8) {
	if x >= 0 && y >= 0 && x < r.img.Rect.Max.X && y < r.img.Rect.Max.Y {
		r.img.Pix[y*r.img.Stride+x] = c
	}
}

// text draws s with its top-left at (x, y), at most maxW pixels wide.
func (r *renderer) text(x, y int, s string, c uint8, maxW int, bold bool) {
	limit := x + maxW
	for _, ch := range s {
		if x+charW > limit {
			return
		}
		g := glyphOf(ch)
		for gy := 0; gy < charH; gy++ {
			bits := g[gy]
			if bold {
				bits |= bits << 1
			}
			for gx := 0; bits != 0; gx++ {
				if bits&1 != 0 {
					r.set(x+gx, y+gy, c)
				}
				bits >>= 1
			}
		}
		x += charW
	}
}

func textWidth(s string) int { return utf8.RuneCountInString(s) * charW }

// textIn draws s vertically centred in rc, left-aligned with padding pad,
// centred or right-aligned.
func (r *renderer) textIn(rc image.Rectangle, s string, c uint8, pad int, align uint8, bold bool) {
	y := rc.Min.Y + (rc.Dy()-charH)/2
	w := textWidth(s)
	x := rc.Min.X + pad
	switch {
	case align&styCenter != 0:
		x = rc.Min.X + max((rc.Dx()-w)/2, 0)
	case align&styRight != 0:
		x = max(rc.Max.X-pad-w, rc.Min.X)
	}
	r.text(x, y, s, c, rc.Max.X-x, bold)
}

func (r *renderer) node(n *Node) {
	rc := n.Rect
	switch n.Role {
	case RoleDesktop:
		r.fill(rc, cDesk)
	case RoleTaskbar:
		r.fill(rc, cBar)
	case RoleButton:
		r.button(n)
	case RoleWindow:
		r.fill(rc, cWin)
		r.border(rc, cBorder, 1)
	case RoleTitleBar:
		c := cInactive
		if n.States&StActive != 0 {
			c = cAccent
		}
		r.fill(rc, c)
		r.textIn(image.Rect(rc.Min.X, rc.Min.Y, rc.Max.X-28, rc.Max.Y), n.Name, cWhite, 8, 0, true)
	case RoleMenuBar, RoleStatusBar:
		r.fill(rc, cPanel)
		r.fill(image.Rect(rc.Min.X, rc.Max.Y-1, rc.Max.X, rc.Max.Y), cGrid)
		if n.Role == RoleStatusBar {
			r.textIn(rc, n.Name, cMuted, 8, 0, false)
		}
	case RoleMenu:
		if n.States&StExpanded != 0 {
			r.fill(rc, cAccentLight)
		}
		r.textIn(rc, n.Name, cText, 0, styCenter, false)
	case RolePopup:
		r.fill(rc, cWhite)
		r.border(rc, cBorder, 1)
	case RoleMenuItem, RoleOption:
		if n.States&StSelected != 0 {
			r.fill(rc, cAccentLight)
		}
		c := cText
		if n.States&StDisabled != 0 {
			c = cMuted
		}
		r.textIn(rc, n.Name, c, 8, 0, false)
		if n.Value != "" {
			r.textIn(rc, n.Value, cMuted, 8, styRight, false)
		}
	case RoleSeparator:
		r.fill(rc, cGrid)
	case RoleTextField, RoleTextArea, RoleCombo:
		r.fill(rc, cWhite)
		if n.States&StFocused != 0 {
			r.border(rc, cAccent, 2)
		} else {
			r.border(rc, cBorder, 1)
		}
		if n.Role == RoleCombo {
			r.textIn(rc, n.Value, cText, 6, 0, false)
			cx, cy := rc.Max.X-14, rc.Min.Y+rc.Dy()/2-2
			for i := 0; i < 4; i++ {
				r.fill(image.Rect(cx-3+i, cy+i, cx+4-i, cy+i+1), cText)
			}
		}
	case RoleParagraph:
		r.text(rc.Min.X, rc.Min.Y+(rc.Dy()-charH)/2, n.Name, cText, rc.Dx(), false)
	case RoleLabel:
		r.textIn(rc, n.Name, n.Style&15, 0, n.Style&(styCenter|styRight), n.Style&styBold != 0)
	case RoleList, RoleTable:
		r.fill(rc, cWhite)
		r.border(rc, cBorder, 1)
	case RoleListItem, RolePageTab:
		r.listItem(n)
	case RoleCell:
		r.cell(n)
	case RoleColHeader, RoleRowHeader:
		r.fill(rc, cPanel)
		r.fill(image.Rect(rc.Max.X-1, rc.Min.Y, rc.Max.X, rc.Max.Y), cGrid)
		r.fill(image.Rect(rc.Min.X, rc.Max.Y-1, rc.Max.X, rc.Max.Y), cGrid)
		c := cText
		if n.States&StSelected != 0 {
			r.fill(image.Rect(rc.Min.X, rc.Max.Y-3, rc.Max.X, rc.Max.Y), cAccent)
		}
		r.textIn(rc, n.Name, c, 0, styCenter, false)
	case RoleSwitch:
		c := cBorder
		if n.States&StChecked != 0 {
			c = cGreen
		}
		r.fill(rc, c)
		k := image.Rect(rc.Min.X+2, rc.Min.Y+2, rc.Min.X+rc.Dy()-2, rc.Max.Y-2)
		if n.States&StChecked != 0 {
			k = k.Add(image.Pt(rc.Dx()-rc.Dy(), 0))
		}
		r.fill(k, cWhite)
	case RoleSlider:
		r.slider(n)
	case RoleDialog:
		r.fill(rc, cWin)
		r.border(rc, cText, 2)
		head := image.Rect(rc.Min.X, rc.Min.Y, rc.Max.X, rc.Min.Y+24)
		r.fill(head.Inset(2), cAccent)
		r.textIn(head, n.Name, cWhite, 10, 0, true)
	case RoleScrollBar:
		r.fill(rc, cPanel)
	case RolePanel:
		r.fill(rc, n.Style&15)
	case RoleCaret:
		r.fill(rc, cText)
	}
	for _, c := range n.Children {
		r.node(c)
	}
}

func (r *renderer) button(n *Node) {
	rc := n.Rect
	switch n.Style {
	case btnDock:
		c := cDock
		if n.States&StActive != 0 {
			c = cAccent
		}
		r.fill(rc, c)
		if n.States&StChecked != 0 {
			r.fill(image.Rect(rc.Min.X+rc.Dx()/2-10, rc.Max.Y-3, rc.Min.X+rc.Dx()/2+10, rc.Max.Y-1), cWhite)
		}
		r.textIn(rc, n.Name, cWhite, 0, styCenter, false)
	case btnFlat:
		r.textIn(rc, "x", cWhite, 0, styCenter, true)
	case btnPrimary:
		r.fill(rc, cAccent)
		r.textIn(rc, n.Name, cWhite, 0, styCenter, true)
	default:
		r.fill(rc, cPanel)
		r.border(rc, cBorder, 1)
		c := cText
		if n.States&StDisabled != 0 {
			c = cMuted
		}
		r.textIn(rc, n.Name, c, 0, styCenter, false)
	}
}

func (r *renderer) listItem(n *Node) {
	rc := n.Rect
	fg, muted := cText, cMuted
	if n.States&StSelected != 0 {
		r.fill(rc, cAccent)
		fg, muted = cWhite, cWhite
	}
	x := rc.Min.X + 6
	if n.Style != iconNone {
		r.icon(x, rc.Min.Y+(rc.Dy()-14)/2, n.Style)
		x += 22
	}
	text := image.Rect(x, rc.Min.Y, rc.Max.X, rc.Max.Y)
	if n.Value != "" {
		vw := textWidth(n.Value) + 12
		r.textIn(text, n.Value, muted, 8, styRight, false)
		text.Max.X -= vw
	}
	r.textIn(text, n.Name, fg, 0, 0, false)
}

func (r *renderer) icon(x, y int, kind uint8) {
	switch kind {
	case iconFolder:
		r.fill(rect(x, y, 7, 3), cYellow)
		r.fill(rect(x, y+2, 16, 12), cYellow)
	case iconFile, iconSheet:
		r.fill(rect(x+1, y, 13, 14), cWhite)
		r.border(rect(x+1, y, 13, 14), cBorder, 1)
		c := cMuted
		if kind == iconSheet {
			c = cGreen
		}
		for i := 0; i < 3; i++ {
			r.fill(rect(x+4, y+3+i*3, 7, 1), c)
		}
	case iconMail:
		r.fill(rect(x, y+2, 16, 11), cWhite)
		r.border(rect(x, y+2, 16, 11), cMuted, 1)
		for i := 0; i < 5; i++ {
			r.set(x+2+i, y+4+i, cMuted)
			r.set(x+13-i, y+4+i, cMuted)
		}
	}
}

func (r *renderer) cell(n *Node) {
	rc := n.Rect
	r.fill(image.Rect(rc.Max.X-1, rc.Min.Y, rc.Max.X, rc.Max.Y), cGrid)
	r.fill(image.Rect(rc.Min.X, rc.Max.Y-1, rc.Max.X, rc.Max.Y), cGrid)
	c := cText
	if len(n.Value) > 0 && n.Value[0] == '#' {
		c = cRed
	}
	r.textIn(image.Rect(rc.Min.X, rc.Min.Y, rc.Max.X-1, rc.Max.Y), n.Value, c, 4, n.Style&styRight, false)
	if n.States&StSelected != 0 {
		r.border(image.Rect(rc.Min.X-1, rc.Min.Y-1, rc.Max.X, rc.Max.Y), cAccent, 2)
	}
}

func (r *renderer) slider(n *Node) {
	rc := n.Rect
	v, _ := strconv.Atoi(n.Value)
	v = min(max(v, 0), 100)
	track := image.Rect(rc.Min.X, rc.Min.Y+rc.Dy()/2-2, rc.Max.X, rc.Min.Y+rc.Dy()/2+2)
	r.fill(track, cBorder)
	kx := rc.Min.X + v*rc.Dx()/100
	r.fill(image.Rect(track.Min.X, track.Min.Y, kx, track.Max.Y), cAccent)
	r.fill(image.Rect(kx-4, rc.Min.Y+1, kx+4, rc.Max.Y-1), cAccent)
}

// cursorShape is an arrow pointer: 1 outline, 2 fill.
var cursorShape = []string{
	"1",
	"11",
	"121",
	"1221",
	"12221",
	"122221",
	"1222221",
	"12222221",
	"122222221",
	"1222222221",
	"12222211111",
	"1221221",
	"121 1221",
	"11  1221",
	"1    1221",
	"     1221",
	"      11",
}

func (r *renderer) cursor(x, y int) {
	for dy, row := range cursorShape {
		for dx, ch := range row {
			switch ch {
			case '1':
				r.set(x+dx, y+dy, cText)
			case '2':
				r.set(x+dx, y+dy, cWhite)
			}
		}
	}
}
