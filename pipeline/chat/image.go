package chat

import (
	"errors"
	"fmt"
	"math"
)

// ImageSpec says how many <|image_pad|> tokens an image becomes. Zero fields
// take the defaults (DefaultImageSpec).
type ImageSpec struct {
	// PatchSize is the vision encoder's patch side in pixels (Qwen3-VL: 16,
	// Qwen2/2.5-VL: 14).
	PatchSize int
	// MergeSize is how many patches per side merge into one token (2).
	MergeSize int
	// MinPixels and MaxPixels bound the resized image's area.
	MinPixels int
	MaxPixels int
	// FixedTokens, when > 0, is the token count of every image regardless of
	// its size (the --image-tokens flag).
	FixedTokens int
}

// Defaults for Qwen3-VL, from qwen-vl-utils (QwenLM/Qwen3-VL,
// qwen-vl-utils/src/qwen_vl_utils/vision_process.py): image_patch_size 16
// for Qwen3-VL, SPATIAL_MERGE_SIZE = 2, IMAGE_MIN_TOKEN_NUM = 4,
// IMAGE_MAX_TOKEN_NUM = 16384, MAX_RATIO = 200, and min/max pixels =
// token count * (patch*merge)^2. (transformers' Qwen2-VL processor instead
// defaults to patch 14, min 56*56, max 28*28*1280.)
const (
	DefaultPatchSize = 16
	DefaultMergeSize = 2
	DefaultMinTokens = 4
	DefaultMaxTokens = 16384
	MaxAspectRatio   = 200
	defaultFactor    = DefaultPatchSize * DefaultMergeSize
	DefaultMinPixels = DefaultMinTokens * defaultFactor * defaultFactor // 4096
	DefaultMaxPixels = DefaultMaxTokens * defaultFactor * defaultFactor // 16777216

	maxImageSide = 1 << 20 // sanity bound; keeps the arithmetic exact

	// MaxImageTokens bounds the pad tokens of one screenshot: Qwen-VL's own
	// IMAGE_MAX_TOKEN_NUM. Beyond it a trajectory of tens of screenshots
	// needs gigabytes per item, and the process runs out of memory.
	MaxImageTokens = DefaultMaxTokens
	// MaxImagePixels bounds MinPixels and MaxPixels: the area of an 8K
	// (7680x4320) screen, more than any desktop screenshot needs.
	MaxImagePixels = 7680 * 4320
)

// DefaultImageSpec is Qwen3-VL's image setup: 32 pixels per token side.
func DefaultImageSpec() ImageSpec {
	return ImageSpec{PatchSize: DefaultPatchSize, MergeSize: DefaultMergeSize, MinPixels: DefaultMinPixels, MaxPixels: DefaultMaxPixels}
}

// withDefaults fills zero fields.
func (s ImageSpec) withDefaults() ImageSpec {
	d := DefaultImageSpec()
	if s.PatchSize == 0 {
		s.PatchSize = d.PatchSize
	}
	if s.MergeSize == 0 {
		s.MergeSize = d.MergeSize
	}
	f := s.PatchSize * s.MergeSize
	if s.MinPixels == 0 {
		s.MinPixels = DefaultMinTokens * f * f
	}
	if s.MaxPixels == 0 {
		s.MaxPixels = DefaultMaxTokens * f * f
	}
	return s
}

// Validate reports a spec that cannot size images, or that gives a
// screenshot more than MaxImageTokens tokens. Each message names the field
// and the segment flag that sets it.
func (s ImageSpec) Validate() error {
	s = s.withDefaults()
	switch {
	case s.FixedTokens < 0 || s.FixedTokens > MaxImageTokens:
		return fmt.Errorf("image spec: FixedTokens (--image-tokens) is %d, want 0..%d", s.FixedTokens, MaxImageTokens)
	case s.PatchSize < 0 || s.MergeSize < 0 || s.PatchSize > 1<<10 || s.MergeSize > 1<<10 || s.PatchSize*s.MergeSize > 1<<10:
		return fmt.Errorf("image spec: bad patch size %d or merge size %d", s.PatchSize, s.MergeSize)
	case s.MinPixels < 0 || s.MinPixels > MaxImagePixels:
		return fmt.Errorf("image spec: MinPixels (--min-pixels) is %d, want 0..%d (an 8K screen)", s.MinPixels, MaxImagePixels)
	case s.MaxPixels < 0 || s.MaxPixels > MaxImagePixels:
		return fmt.Errorf("image spec: MaxPixels (--max-pixels) is %d, want 0..%d (an 8K screen)", s.MaxPixels, MaxImagePixels)
	case s.MaxPixels < s.MinPixels:
		return fmt.Errorf("image spec: need 0 <= MinPixels (%d) <= MaxPixels (%d)", s.MinPixels, s.MaxPixels)
	}
	// A resized screenshot has about MaxPixels/f^2 tokens at most (and at
	// least MinPixels/f^2), so small patches can give too many tokens even
	// within the pixel bound.
	if f := s.PatchSize * s.MergeSize; s.FixedTokens == 0 && s.MaxPixels/(f*f) > MaxImageTokens {
		return fmt.Errorf("image spec: MaxPixels (--max-pixels) %d at %d pixels per token side gives up to %d tokens per screenshot, over %d",
			s.MaxPixels, f, s.MaxPixels/(f*f), MaxImageTokens)
	}
	return nil
}

// ErrImageSize is wrapped by Resize and Tokens for an image they cannot size.
var ErrImageSize = errors.New("bad image size")

// Resize is Qwen's smart_resize: the size (width, height) an image of the
// given size is resized to before encoding, both multiples of
// PatchSize*MergeSize, area within [MinPixels, MaxPixels], aspect ratio kept
// as far as possible. It follows qwen-vl-utils exactly, including Python's
// round-half-to-even, except that a side never shrinks below one token
// (where Python would return 0 for extreme MaxPixels).
func (s ImageSpec) Resize(width, height int) (w, h int, err error) {
	if err := s.Validate(); err != nil {
		return 0, 0, err
	}
	s = s.withDefaults()
	if width <= 0 || height <= 0 || width > maxImageSide || height > maxImageSide {
		return 0, 0, fmt.Errorf("%w: %dx%d", ErrImageSize, width, height)
	}
	if float64(max(width, height))/float64(min(width, height)) > MaxAspectRatio {
		return 0, 0, fmt.Errorf("%w: %dx%d has an aspect ratio above %d", ErrImageSize, width, height, MaxAspectRatio)
	}
	f := s.PatchSize * s.MergeSize
	ff := float64(f)
	hBar := max(f, int(math.RoundToEven(float64(height)/ff))*f)
	wBar := max(f, int(math.RoundToEven(float64(width)/ff))*f)
	area := float64(height) * float64(width) // exact: both sides <= 2^20
	switch {
	case hBar*wBar > s.MaxPixels:
		beta := math.Sqrt(area / float64(s.MaxPixels))
		hBar = max(f, int(math.Floor(float64(height)/beta/ff))*f)
		wBar = max(f, int(math.Floor(float64(width)/beta/ff))*f)
	case hBar*wBar < s.MinPixels:
		beta := math.Sqrt(float64(s.MinPixels) / area)
		hBar = int(math.Ceil(float64(height)*beta/ff)) * f
		wBar = int(math.Ceil(float64(width)*beta/ff)) * f
	}
	return wBar, hBar, nil
}

// Tokens is the number of <|image_pad|> tokens for an image of the given
// size: FixedTokens if set, else (h'/factor)*(w'/factor) after Resize.
func (s ImageSpec) Tokens(width, height int) (int, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	if s.FixedTokens > 0 {
		return s.FixedTokens, nil
	}
	w, h, err := s.Resize(width, height)
	if err != nil {
		return 0, err
	}
	d := s.withDefaults()
	f := d.PatchSize * d.MergeSize
	return (w / f) * (h / f), nil
}
