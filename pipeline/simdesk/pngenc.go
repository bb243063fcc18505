package simdesk

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
)

// pngWriter encodes 16-colour paletted frames as 4-bit PNGs. The standard
// encoder packs 4-bit rows through a method call per pixel, which costs
// more than rendering the frame; this writer packs rows straight from Pix
// and reuses its zlib writer and buffers, so a frame costs one deflate pass
// over half a byte per pixel. Rows use PNG filter 0, as the standard
// encoder does for paletted images.
type pngWriter struct {
	zw   *zlib.Writer
	idat bytes.Buffer
	row  []byte
	plte []byte
}

func newPNGWriter(pal color.Palette) *pngWriter {
	w := &pngWriter{}
	for _, c := range pal {
		r, g, b, _ := c.RGBA()
		w.plte = append(w.plte, byte(r>>8), byte(g>>8), byte(b>>8))
	}
	w.zw, _ = zlib.NewWriterLevel(&w.idat, zlib.BestSpeed) // BestSpeed is a valid level
	return w
}

func writeChunk(out *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	out.Write(n[:])
	start := out.Len()
	out.WriteString(typ)
	out.Write(data)
	binary.BigEndian.PutUint32(n[:], crc32.ChecksumIEEE(out.Bytes()[start:]))
	out.Write(n[:])
}

// encode appends the PNG of img (whose indices must be below 16) to out.
func (w *pngWriter) encode(out *bytes.Buffer, img *image.Paletted) error {
	wd, ht := img.Rect.Dx(), img.Rect.Dy()
	out.WriteString("\x89PNG\r\n\x1a\n")
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(wd))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(ht))
	ihdr[8], ihdr[9] = 4, 3 // bit depth 4, colour type 3 (paletted)
	writeChunk(out, "IHDR", ihdr[:])
	writeChunk(out, "PLTE", w.plte)
	w.idat.Reset()
	w.zw.Reset(&w.idat)
	n := (wd + 1) / 2
	if cap(w.row) < n+1 {
		w.row = make([]byte, n+1)
	}
	row := w.row[:n+1]
	row[0] = 0 // filter: none
	for y := 0; y < ht; y++ {
		pix := img.Pix[y*img.Stride : y*img.Stride+wd]
		pack4(row[1:], pix)
		if _, err := w.zw.Write(row); err != nil {
			return fmt.Errorf("png: compress row %d: %w", y, err)
		}
	}
	if err := w.zw.Close(); err != nil {
		return fmt.Errorf("png: compress: %w", err)
	}
	writeChunk(out, "IDAT", w.idat.Bytes())
	writeChunk(out, "IEND", nil)
	return nil
}

// pack4 packs pixel indices (< 16) two per byte, high nibble first, eight
// pixels per 64-bit word: shifting the word left by 4 and right by 8 puts
// each pair in one byte, then three mask-and-shift steps gather the four
// bytes.
func pack4(dst, pix []byte) {
	i := 0
	for ; i+8 <= len(pix); i += 8 {
		x := binary.LittleEndian.Uint64(pix[i:])
		t := (x<<4 | x>>8) & 0x00ff00ff00ff00ff
		t = (t | t>>8) & 0x0000ffff0000ffff
		t = (t | t>>16) & 0x00000000ffffffff
		binary.LittleEndian.PutUint32(dst[i/2:], uint32(t))
	}
	for ; i+1 < len(pix); i += 2 {
		dst[i/2] = pix[i]<<4 | pix[i+1]&15
	}
	if i < len(pix) {
		dst[i/2] = pix[i] << 4
	}
}
