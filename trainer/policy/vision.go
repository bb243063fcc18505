package policy

import (
	"fmt"
	"math"
	"strings"
)

// ImagePatches cuts a single-channel image (row-major values, e.g. a
// downscaled grayscale screenshot in [0, 1]) into non-overlapping
// patch x patch squares, row by row, each flattened row-major: the feature
// vectors for a policy with PatchDim = patch*patch. Width and height must be
// multiples of patch.
func ImagePatches(pix []float32, width, height, patch int) ([][]float32, error) {
	if patch < 1 || width < 1 || height < 1 || width%patch != 0 || height%patch != 0 {
		return nil, fmt.Errorf("image patches: %dx%d image does not split into %dx%d patches", width, height, patch, patch)
	}
	if len(pix) != width*height {
		return nil, fmt.Errorf("image patches: %d values for a %dx%d image", len(pix), width, height)
	}
	var out [][]float32
	for py := 0; py < height; py += patch {
		for px := 0; px < width; px += patch {
			v := make([]float32, 0, patch*patch)
			for y := py; y < py+patch; y++ {
				for _, x := range pix[y*width+px : y*width+px+patch] {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						return nil, fmt.Errorf("image patches: non-finite pixel at (%d, %d)", px, y)
					}
					v = append(v, x)
				}
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// VisionTokens returns the context text that stands for an image of n
// patches: <|vision_start|>, n times <|image_pad|>, <|vision_end|>.
func VisionTokens(n int) string {
	return TokVisionStart + strings.Repeat(TokImagePad, max(n, 0)) + TokVisionEnd
}
