package causal

import (
	"bytes"
	"fmt"
	"image"
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
	row := make([]float32, 3*W) // the row's R, G, B in [0, 0xffff], premultiplied
	fill := rowFiller(img, row)
	for y := 0; y < H; y++ {
		if err := fill(y); err != nil {
			return nil, fmt.Errorf("screenshot row %d: %w", y, err)
		}
		base := (y * th / H) * tw
		for cx := 0; cx < tw; cx++ {
			o := base + cx
			r, g, bl := thumb[3*o], thumb[3*o+1], thumb[3*o+2]
			for x := from[cx]; x < from[cx+1]; x++ {
				r += row[3*x]
				g += row[3*x+1]
				bl += row[3*x+2]
			}
			thumb[3*o], thumb[3*o+1], thumb[3*o+2] = r, g, bl
			count[o] += float32(from[cx+1] - from[cx])
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
	case *image.Paletted:
		// 256 entries, so that any index reads without a bounds check; an
		// index past the palette (png.Decode extends the palette to cover
		// every index it reads, so only a hand-built image has one) is an
		// error.
		n := len(im.Palette)
		pal := make([][3]float32, max(256, n))
		for i, col := range im.Palette {
			r, g, bl, _ := col.RGBA()
			pal[i] = [3]float32{float32(r), float32(g), float32(bl)}
		}
		return func(y int) error {
			p := im.Pix[y*im.Stride:]
			hi := uint8(0)
			for x := 0; x < W; x++ {
				v := pal[p[x]]
				hi = max(hi, p[x])
				row[3*x], row[3*x+1], row[3*x+2] = v[0], v[1], v[2]
			}
			if int(hi) >= n {
				return fmt.Errorf("palette index %d outside the palette of %d colours", hi, n)
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
