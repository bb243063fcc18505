package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	_ "image/jpeg" // DecodeConfig of JPEG screenshots in generic logs
	"strings"

	"github.com/cualake/cualake/schemas"
)

var (
	pngMagic = []byte("\x89PNG\r\n\x1a\n")
	pngIEND  = []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82}
)

// ErrNotImage marks bytes that are not a complete PNG or JPEG image.
var ErrNotImage = errors.New("not a complete PNG or JPEG image")

// PNGSize reads the width and height from a PNG's IHDR chunk and checks that
// the file ends with IEND, so a screenshot truncated by a crash is caught
// without decoding its pixels.
func PNGSize(b []byte) (w, h int, err error) {
	if len(b) < 8+25+12 || !bytes.Equal(b[:8], pngMagic) || string(b[12:16]) != "IHDR" {
		return 0, 0, ErrNotImage
	}
	if !bytes.HasSuffix(b, pngIEND) {
		return 0, 0, errors.New("PNG is truncated (no IEND chunk)")
	}
	w, h = int(binary.BigEndian.Uint32(b[16:20])), int(binary.BigEndian.Uint32(b[20:24]))
	if w <= 0 || h <= 0 || w > 1<<20 || h > 1<<20 {
		return 0, 0, errors.New("PNG has an implausible size")
	}
	return w, h, nil
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
