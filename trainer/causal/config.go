package causal

import (
	"errors"
	"fmt"
)

// Config fixes the model's shape; it is stored in checkpoints.
type Config struct {
	// VocabSize is the number of compact ids, <unk> (0) included: the size
	// of the id map plus one.
	VocabSize int `json:"vocab_size"`
	// Dim is the width of embeddings and hidden states.
	Dim int `json:"dim"`
	// Heads is the number of causal self-attention heads per layer.
	Heads int `json:"heads"`
	// Layers is the number of pre-LN transformer layers.
	Layers int `json:"layers"`
	// FFNDim is the hidden width of each layer's GELU feed-forward block.
	FFNDim int `json:"ffn_dim"`
	// MaxContext bounds a stream's length in tokens (the sinusoidal position
	// table).
	MaxContext int `json:"max_context"`
	// ImageCols and ImageRows are the patch grid of a screenshot: it is
	// shrunk to ImageCols*PatchSize x ImageRows*PatchSize pixels and cut into
	// ImageCols*ImageRows patches, one per <|image_pad|> token.
	ImageCols int `json:"image_cols"`
	ImageRows int `json:"image_rows"`
	// PatchSize is a patch's side in thumbnail pixels; a patch is
	// PatchSize*PatchSize RGB values.
	PatchSize int `json:"patch_size"`
	// MaxResponse bounds a generated response in tokens (its <|im_end|>
	// included).
	MaxResponse int `json:"max_response"`
}

// ImageTokens is the number of <|image_pad|> tokens per screenshot.
func (c Config) ImageTokens() int { return c.ImageCols * c.ImageRows }

// PatchDim is the length of one patch's feature vector.
func (c Config) PatchDim() int { return c.PatchSize * c.PatchSize * 3 }

// DefaultConfig is the 2-core CPU setting: 64 wide, 2 layers of 4 heads,
// screenshots as 4 x 2 patches of 8 x 8 RGB pixels (8 image tokens), 8192
// positions, responses of at most 24 tokens. Weights: 112,960 plus 129 per
// vocabulary entry.
func DefaultConfig(vocabSize int) Config {
	return Config{VocabSize: vocabSize, Dim: 64, Heads: 4, Layers: 2, FFNDim: 256, MaxContext: 8192,
		ImageCols: 4, ImageRows: 2, PatchSize: 8, MaxResponse: 24}
}

// Validate reports whether the configuration is usable.
func (c Config) Validate() error {
	var errs []error
	if c.VocabSize < 2 {
		errs = append(errs, fmt.Errorf("vocab_size %d: want at least <unk> and one token", c.VocabSize))
	}
	if c.Dim < 1 || c.Heads < 1 || c.Dim%c.Heads != 0 {
		errs = append(errs, fmt.Errorf("dim %d must be a positive multiple of heads %d", c.Dim, c.Heads))
	}
	if c.Layers < 1 || c.Layers > 32 {
		errs = append(errs, fmt.Errorf("layers %d outside 1..32", c.Layers))
	}
	if c.FFNDim < 1 {
		errs = append(errs, fmt.Errorf("ffn_dim %d must be positive", c.FFNDim))
	}
	if c.MaxContext < 2 || c.MaxContext > 1<<17 {
		errs = append(errs, fmt.Errorf("max_context %d outside 2..131072", c.MaxContext))
	}
	if c.ImageCols < 1 || c.ImageRows < 1 || c.PatchSize < 1 || c.ImageTokens() > 4096 {
		errs = append(errs, fmt.Errorf("image grid %dx%d of %d-pixel patches: want positive sizes, at most 4096 patches",
			c.ImageCols, c.ImageRows, c.PatchSize))
	}
	if c.MaxResponse < 1 || c.MaxResponse > 4096 {
		errs = append(errs, fmt.Errorf("max_response %d outside 1..4096", c.MaxResponse))
	}
	return errors.Join(errs...)
}
