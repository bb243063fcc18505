package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	_ "image/jpeg" // DecodeConfig of JPEG screenshots in generic logs
	"strings"

	"github.com/cualake/cualake/schemas"
)

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// ErrNotImage marks bytes that are not a complete PNG or JPEG image.
var ErrNotImage = errors.New("not a complete PNG or JPEG image")

// PNGSize reads the width and height from a PNG's IHDR chunk after
// checking the whole file: every chunk is complete and matches its CRC, the
// first is IHDR, image data is present and IEND ends the file. So a
// screenshot truncated by a crash, or corrupted on disk, is caught without
// decoding its pixels (a CRC pass costs about as much as the hash the
// blob needs anyway).
func PNGSize(b []byte) (w, h int, err error) {
	if len(b) < 8+25+12 || !bytes.Equal(b[:8], pngMagic) || string(b[12:16]) != "IHDR" {
		return 0, 0, ErrNotImage
	}
	if err := checkPNGChunks(b); err != nil {
		return 0, 0, err
	}
	w, h = int(binary.BigEndian.Uint32(b[16:20])), int(binary.BigEndian.Uint32(b[20:24]))
	if w <= 0 || h <= 0 || w > 1<<20 || h > 1<<20 {
		return 0, 0, errors.New("PNG has an implausible size")
	}
	return w, h, nil
}

// checkPNGChunks walks the chunks after the signature.
func checkPNGChunks(b []byte) error {
	idat := false
	for off := 8; ; {
		if len(b)-off < 12 {
			return fmt.Errorf("PNG is truncated (no IEND chunk; %d stray bytes at byte %d)", len(b)-off, off)
		}
		n := int64(binary.BigEndian.Uint32(b[off:]))
		typ := b[off+4 : off+8]
		if n > int64(len(b)-off-12) {
			return fmt.Errorf("PNG is truncated: chunk %q at byte %d holds %d bytes, %d are left (no IEND chunk)", typ, off, n, len(b)-off-12)
		}
		end := off + 8 + int(n)
		if got, want := crc32.ChecksumIEEE(b[off+4:end]), binary.BigEndian.Uint32(b[end:]); got != want {
			return fmt.Errorf("PNG chunk %q at byte %d fails its CRC check (corrupt data)", typ, off)
		}
		switch string(typ) {
		case "IDAT":
			idat = true
		case "IEND":
			if !idat {
				return errors.New("PNG has no IDAT chunk (no image data)")
			}
			if rest := len(b) - end - 4; rest > 0 {
				return fmt.Errorf("PNG has %d bytes after IEND", rest)
			}
			return nil
		}
		off = end + 4
	}
}

// ImageBlob returns the blob row of a PNG or JPEG image: hash, mime, size and
// dimensions read from the header.
func ImageBlob(b []byte) (schemas.Blob, error) {
	var w, h int
	mime := "image/png"
	if bytes.HasPrefix(b, pngMagic) {
		var err error
		if w, h, err = PNGSize(b); err != nil {
			return schemas.Blob{}, err
		}
	} else if bytes.HasPrefix(b, []byte{0xFF, 0xD8}) {
		cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
		if err != nil || format != "jpeg" {
			return schemas.Blob{}, ErrNotImage
		}
		w, h, mime = cfg.Width, cfg.Height, "image/jpeg"
	} else {
		return schemas.Blob{}, ErrNotImage
	}
	return schemas.Blob{Hash: schemas.HashBytes(b), Mime: mime, Size: int64(len(b)), Width: int32(w), Height: int32(h), Bytes: b}, nil
}

// TextBlob returns the blob row of a text file such as a run log.
func TextBlob(b []byte) schemas.Blob {
	return schemas.Blob{Hash: schemas.HashBytes(b), Mime: "text/plain; charset=utf-8", Size: int64(len(b)), Bytes: b}
}

// SafeName reports whether name is a plain relative path that stays inside
// its folder (no absolute path, no "..").
func SafeName(name string) bool {
	if name == "" || strings.ContainsRune(name, 0) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return false
	}
	if len(name) >= 2 && name[1] == ':' { // a Windows drive, C:...
		return false
	}
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return false
		}
	}
	return true
}
