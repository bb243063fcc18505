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
	thumb := make([]float32, tw*th*3)
	count := make([]float32, tw*th)
	// column and row of the thumbnail each source pixel falls in
	colOf := make([]int, b.Dx())
	for x := range colOf {
		colOf[x] = x * tw / b.Dx()
	}
	add := func(x, y int, r, g, bl uint32) {
		o := (y*th/b.Dy())*tw + colOf[x]
		thumb[3*o] += float32(r)
		thumb[3*o+1] += float32(g)
		thumb[3*o+2] += float32(bl)
		count[o]++
	}
	switch im := img.(type) {
	case *image.RGBA:
		for y := 0; y < b.Dy(); y++ {
			row := im.Pix[y*im.Stride:]
			for x := 0; x < b.Dx(); x++ {
				add(x, y, uint32(row[4*x])*257, uint32(row[4*x+1])*257, uint32(row[4*x+2])*257)
			}
		}
	case *image.NRGBA:
		for y := 0; y < b.Dy(); y++ {
			row := im.Pix[y*im.Stride:]
			for x := 0; x < b.Dx(); x++ {
				// alpha-premultiplied, as color.NRGBA.RGBA gives it
				a := uint32(row[4*x+3]) * 257
				add(x, y, uint32(row[4*x])*257*a/0xffff, uint32(row[4*x+1])*257*a/0xffff, uint32(row[4*x+2])*257*a/0xffff)
			}
		}
	case *image.Paletted:
		pal := make([][3]uint32, len(im.Palette))
		for i, col := range im.Palette {
			r, g, bl, _ := col.RGBA()
			pal[i] = [3]uint32{r, g, bl}
		}
		for y := 0; y < b.Dy(); y++ {
			row := im.Pix[y*im.Stride:]
			for x := 0; x < b.Dx(); x++ {
				p := pal[row[x]]
				add(x, y, p[0], p[1], p[2])
			}
		}
	default:
		for y := 0; y < b.Dy(); y++ {
			for x := 0; x < b.Dx(); x++ {
				r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
				add(x, y, r, g, bl)
			}
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
