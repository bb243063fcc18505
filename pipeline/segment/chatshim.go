package segment

// This file stands in for pipeline/chat, which another engineer is writing:
// the screenshot token count (Qwen-VL's smart_resize). Once chat lands,
// ImageSpec becomes an alias of chat.ImageSpec and this file goes.

import (
	"fmt"
	"math"
)

// ImageSpec says how many <|image_pad|> tokens a screenshot takes: either
// FixedTokens, or Qwen-VL's smart_resize of its width and height to
// multiples of PatchSize*MergeSize within [MinPixels, MaxPixels], one token
// per MergeSize x MergeSize patches.
type ImageSpec struct {
	PatchSize   int `json:"patch_size"`
	MergeSize   int `json:"merge_size"`
	MinPixels   int `json:"min_pixels"`
	MaxPixels   int `json:"max_pixels"`
	FixedTokens int `json:"fixed_tokens,omitempty"`
}

// DefaultImageSpec is Qwen3-VL's image processor: 16-pixel patches merged
// 2x2, between 65,536 and 16,777,216 pixels.
func DefaultImageSpec() ImageSpec {
	return ImageSpec{PatchSize: 16, MergeSize: 2, MinPixels: 65536, MaxPixels: 16777216}
}

// Validate checks the spec's domain.
func (s ImageSpec) Validate() error {
	if s.FixedTokens < 0 {
		return fmt.Errorf("image tokens %d, want >= 0", s.FixedTokens)
	}
	if s.FixedTokens > 0 {
		return nil
	}
	if s.PatchSize < 1 || s.MergeSize < 1 || s.MinPixels < 0 || s.MaxPixels < 1 || s.MinPixels > s.MaxPixels {
		return fmt.Errorf("image spec patch %d merge %d pixels [%d, %d]: want patch, merge >= 1 and 0 <= min <= max",
			s.PatchSize, s.MergeSize, s.MinPixels, s.MaxPixels)
	}
	return nil
}

// Tokens is the number of image pad tokens of a width x height screenshot.
func (s ImageSpec) Tokens(width, height int) (int, error) {
	if s.FixedTokens > 0 {
		return s.FixedTokens, nil
	}
	if width < 1 || height < 1 {
		return 0, fmt.Errorf("screenshot size %dx%d", width, height)
	}
	f := float64(s.PatchSize * s.MergeSize)
	h, w := float64(height), float64(width)
	if math.Max(h, w)/math.Min(h, w) > 200 {
		return 0, fmt.Errorf("screenshot size %dx%d: aspect ratio above 200", width, height)
	}
	hb := math.Max(f, math.RoundToEven(h/f)*f)
	wb := math.Max(f, math.RoundToEven(w/f)*f)
	if hb*wb > float64(s.MaxPixels) {
		beta := math.Sqrt(h * w / float64(s.MaxPixels))
		hb = math.Max(f, math.Floor(h/beta/f)*f)
		wb = math.Max(f, math.Floor(w/beta/f)*f)
	} else if hb*wb < float64(s.MinPixels) {
		beta := math.Sqrt(float64(s.MinPixels) / (h * w))
		hb = math.Ceil(h*beta/f) * f
		wb = math.Ceil(w*beta/f) * f
	}
	p := float64(s.PatchSize)
	return int(hb/p) * int(wb/p) / (s.MergeSize * s.MergeSize), nil
}
