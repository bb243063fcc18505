package simdesk

import (
	"image"

	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// glyph is one 7x13 character cell as row bitmaps (bit x set = ink).
type glyph [charH]uint8

// glyphs holds the printable ASCII range of basicfont's 7x13 face (the X11
// misc-fixed font); other runes draw as the replacement glyph. Bitmaps are
// extracted once so drawing text is a few byte writes per row.
var glyphs, fallbackGlyph = loadGlyphs()

func loadGlyphs() ([95]glyph, glyph) {
	var out [95]glyph
	face := basicfont.Face7x13
	extract := func(r rune) glyph {
		var g glyph
		dr, mask, mp, _, ok := face.Glyph(fixed.P(0, face.Ascent), r)
		if !ok {
			return g
		}
		a, isAlpha := mask.(*image.Alpha)
		for y := 0; y < charH; y++ {
			for x := 0; x < charW; x++ {
				px, py := x-dr.Min.X, y-dr.Min.Y
				if px < 0 || py < 0 || px >= dr.Dx() || py >= dr.Dy() {
					continue
				}
				var alpha uint8
				if isAlpha {
					alpha = a.AlphaAt(mp.X+px, mp.Y+py).A
				} else {
					_, _, _, a32 := mask.At(mp.X+px, mp.Y+py).RGBA()
					alpha = uint8(a32 >> 8)
				}
				if alpha >= 0x80 {
					g[y] |= 1 << x
				}
			}
		}
		return g
	}
	for r := rune(32); r < 127; r++ {
		out[r-32] = extract(r)
	}
	return out, extract('\ufffd')
}

func glyphOf(r rune) *glyph {
	if r >= 32 && r < 127 {
		return &glyphs[r-32]
	}
	return &fallbackGlyph
}
