package causal

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
)

// Patches turns a PNG screenshot into the model's image features: the image
// is shrunk to ImageCols*PatchSize x ImageRows*PatchSize pixels (each
// thumbnail pixel the mean of the source pixels it covers) and cut into
// ImageCols*ImageRows patches, row by row, each PatchSize*PatchSize RGB
// triples in [0, 1], row-major. Pure Go and deterministic.
func (c Config) Patches(pngBytes []byte) ([][]float32, error) {
	img, err := png.Decode(bytes.NewReader(pngBytes))
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	return c.ImagePatches(img)
}

// ImagePatches is Patches on a decoded image.
func (c Config) ImagePatches(img image.Image) ([][]float32, error) {
	b := img.Bounds()
	tw, th := c.ImageCols*c.PatchSize, c.ImageRows*c.PatchSize
	if b.Dx() < tw || b.Dy() < th {
		return nil, fmt.Errorf("screenshot of %dx%d pixels is smaller than the %dx%d thumbnail", b.Dx(), b.Dy(), tw, th)
	}
	W, H := b.Dx(), b.Dy()
	// Thumbnail column cx covers the source columns [from[cx], from[cx+1]):
	// x*tw/W rises by at most 1 per pixel, as tw <= W.
	from := make([]int, tw+1)
	for x := 1; x < W; x++ {
		if col := x * tw / W; col != (x-1)*tw/W {
			from[col] = x
		}
	}
	from[tw] = W
	// Each thumbnail pixel sums its source pixels in row-major order, one
	// float32 addition at a time, then divides by their count times 0xffff:
	// the sums are accumulated in that order here too, so the result does
	// not depend on how a row's values are fetched.
	thumb := make([]float32, tw*th*3)
	count := make([]float32, tw*th)
	pi, paletted := img.(*image.Paletted)
	var (
		pal  *[256][3]float32  // paletted: each index's R, G, B
		row  []float32         // other formats: the row's R, G, B in [0, 0xffff], premultiplied
		fill func(y int) error // writes source row y into row
	)
	if paletted {
		pal = paletteValues(pi.Palette)
	} else {
		row = make([]float32, 3*W)
		fill = rowFiller(img, row)
	}
	for y := 0; y < H; y++ {
		base := (y * th / H) * tw
		if paletted {
			// the simulator's frames and its PNGs: colours read from the
			// palette as they are added, without a row of floats between
			if hi := addPalettedRow(thumb[3*base:3*(base+tw)], pi.Pix[y*pi.Stride:y*pi.Stride+W], pal, from); int(hi) >= len(pi.Palette) {
				return nil, fmt.Errorf("screenshot row %d: palette index %d outside the palette of %d colours", y, hi, len(pi.Palette))
			}
		} else {
			if err := fill(y); err != nil {
				return nil, fmt.Errorf("screenshot row %d: %w", y, err)
			}
			addRow(thumb[3*base:3*(base+tw)], row, from)
		}
		for cx := 0; cx < tw; cx++ {
			count[base+cx] += float32(from[cx+1] - from[cx])
		}
	}
	for o, n := range count {
		for k := 0; k < 3; k++ {
			thumb[3*o+k] /= n * 0xffff
		}
	}
	ps := c.PatchSize
	out := make([][]float32, 0, c.ImageTokens())
	for py := 0; py < c.ImageRows; py++ {
		for px := 0; px < c.ImageCols; px++ {
			v := make([]float32, 0, c.PatchDim())
			for y := py * ps; y < (py+1)*ps; y++ {
				o := (y*tw + px*ps) * 3
				v = append(v, thumb[o:o+3*ps]...)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// addRow adds one source row (R, G, B triples) to a thumbnail row (tw
// R, G, B sums): thumbnail column cx takes the source columns
// [from[cx], from[cx+1]), each added to the sum in column order.
// (addPalettedRow, the simulator's path, interleaves columns for speed;
// other formats are rare enough to take the plain loop.)
func addRow(thumb, row []float32, from []int) {
	for cx := 0; cx+1 < len(from); cx++ {
		addColumn(thumb[3*cx:3*cx+3], row, from[cx], from[cx+1])
	}
}

// paletteValues returns each palette entry's R, G, B (color.RGBA's values,
// as floats), 256 entries so that any index reads without a bounds check
// (those past the palette are zero, and an index there is an error).
func paletteValues(p color.Palette) *[256][3]float32 {
	var pal [256][3]float32
	for i, col := range p[:min(len(p), 256)] {
		r, g, b, _ := col.RGBA()
		pal[i] = [3]float32{float32(r), float32(g), float32(b)}
	}
	return &pal
}

// addPalettedRow is addRow on a row of palette indices: it adds the
// colours in the same order, so the sums are addRow's on the filled row,
// bit for bit. Each sum is a chain of dependent float additions, so four
// columns go at once (twelve independent chains, each in its own order).
// It returns the largest index read.
func addPalettedRow(thumb []float32, pix []uint8, pal *[256][3]float32, from []int) uint8 {
	tw := len(from) - 1
	hi := uint8(0)
	cx := 0
	for ; cx+4 <= tw; cx += 4 {
		a, b, c, d := from[cx], from[cx+1], from[cx+2], from[cx+3]
		n := min(b-a, c-b, d-c, from[cx+4]-d)
		t := thumb[3*cx : 3*cx+12 : 3*cx+12]
		r0, g0, b0, r1, g1, b1 := t[0], t[1], t[2], t[3], t[4], t[5]
		r2, g2, b2, r3, g3, b3 := t[6], t[7], t[8], t[9], t[10], t[11]
		p0, p1, p2, p3 := pix[a:a+n], pix[b:b+n], pix[c:c+n], pix[d:d+n]
		for i := range p0 {
			i0, i1, i2, i3 := p0[i], p1[i], p2[i], p3[i]
			hi = max(hi, i0, i1, i2, i3)
			v0, v1, v2, v3 := &pal[i0], &pal[i1], &pal[i2], &pal[i3]
			r0, g0, b0 = r0+v0[0], g0+v0[1], b0+v0[2]
			r1, g1, b1 = r1+v1[0], g1+v1[1], b1+v1[2]
			r2, g2, b2 = r2+v2[0], g2+v2[1], b2+v2[2]
			r3, g3, b3 = r3+v3[0], g3+v3[1], b3+v3[2]
		}
		t[0], t[1], t[2], t[3], t[4], t[5] = r0, g0, b0, r1, g1, b1
		t[6], t[7], t[8], t[9], t[10], t[11] = r2, g2, b2, r3, g3, b3
		for k := 0; k < 4; k++ {
			hi = max(hi, addPalettedColumn(t[3*k:3*k+3], pix, pal, from[cx+k]+n, from[cx+k+1]))
		}
	}
	for ; cx < tw; cx++ {
		hi = max(hi, addPalettedColumn(thumb[3*cx:3*cx+3], pix, pal, from[cx], from[cx+1]))
	}
	return hi
}

// addPalettedColumn is addColumn on palette indices; it returns the
// largest index read.
func addPalettedColumn(sum []float32, pix []uint8, pal *[256][3]float32, x0, x1 int) uint8 {
	hi := uint8(0)
	r, g, b := sum[0], sum[1], sum[2]
	for _, i := range pix[x0:x1] {
		hi = max(hi, i)
		v := &pal[i]
		r, g, b = r+v[0], g+v[1], b+v[2]
	}
	sum[0], sum[1], sum[2] = r, g, b
	return hi
}

// addColumn adds the source columns [x0, x1) of row to one thumbnail
// pixel's sums, in column order.
func addColumn(sum, row []float32, x0, x1 int) {
	r, g, b := sum[0], sum[1], sum[2]
	for x := x0; x < x1; x++ {
		r += row[3*x]
		g += row[3*x+1]
		b += row[3*x+2]
	}
	sum[0], sum[1], sum[2] = r, g, b
}

// rowFiller returns a function that writes source row y (relative to the
// bounds) of img into row as R, G, B triples, alpha-premultiplied in
// [0, 0xffff] as color.Color.RGBA gives them, reading the pixel buffer
// directly for the formats screenshots decode to.
func rowFiller(img image.Image, row []float32) func(y int) error {
	b := img.Bounds()
	W := b.Dx()
	switch im := img.(type) {
	case *image.RGBA:
		return func(y int) error {
			p := im.Pix[y*im.Stride:]
			for x := 0; x < W; x++ {
				row[3*x], row[3*x+1], row[3*x+2] = float32(uint32(p[4*x])*257), float32(uint32(p[4*x+1])*257), float32(uint32(p[4*x+2])*257)
			}
			return nil
		}
	case *image.NRGBA:
		return func(y int) error {
			p := im.Pix[y*im.Stride:]
			for x := 0; x < W; x++ {
				a := uint32(p[4*x+3]) * 257
				row[3*x] = float32(uint32(p[4*x]) * 257 * a / 0xffff)
				row[3*x+1] = float32(uint32(p[4*x+1]) * 257 * a / 0xffff)
				row[3*x+2] = float32(uint32(p[4*x+2]) * 257 * a / 0xffff)
			}
			return nil
		}
	default:
		return func(y int) error {
			for x := 0; x < W; x++ {
				r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
				row[3*x], row[3*x+1], row[3*x+2] = float32(r), float32(g), float32(bl)
			}
			return nil
		}
	}
}
