package policy

import (
	"errors"
	"fmt"
)

// Config fixes the policy's shape. It is stored in checkpoints.
type Config struct {
	// VocabSize is the number of tokens (the vocabulary's size).
	VocabSize int `json:"vocab_size"`
	// Dim is the width of embeddings and hidden states.
	Dim int `json:"dim"`
	// Heads is the number of self-attention heads in the context encoder.
	Heads int `json:"heads"`
	// Layers is the number of transformer encoder layers over the context.
	Layers int `json:"layers"`
	// FFNDim is the hidden width of each encoder layer's feed-forward block.
	FFNDim int `json:"ffn_dim"`
	// PatchDim is the length of one screenshot patch feature vector; 0 means
	// the policy reads text only.
	PatchDim int `json:"patch_dim"`
	// MaxContext bounds the context length in tokens.
	MaxContext int `json:"max_context"`
	// MaxAction bounds the length of a generated action in tokens.
	MaxAction int `json:"max_action"`
	// Copy adds a pointer-generator output: each action token is drawn from a
	// learned mixture of the vocabulary softmax and the decoder's attention
	// over the context's tokens, so a name, a word marker or an element
	// reference on screen can be copied rather than memorised per id.
	Copy bool `json:"copy,omitempty"`
	// AttnPool starts the decoder from a learned attention pooling of the
	// context next to its mean, so that a few decisive tokens (the task's
	// verb, the step counter) are not averaged away by a long screen.
	AttnPool bool `json:"attn_pool,omitempty"`
}

// DefaultConfig returns the small CPU-trainable configuration: 96-wide, one
// 4-head encoder layer, attention pooling, a GRU decoder with attention and
// a copy output: 195,745 weights plus 193 per vocabulary token (0.27M at 400
// tokens).
func DefaultConfig(vocabSize int) Config {
	return Config{
		VocabSize:  vocabSize,
		Dim:        96,
		Heads:      4,
		Layers:     1,
		FFNDim:     192,
		MaxContext: 512,
		MaxAction:  24,
		Copy:       true,
		AttnPool:   true,
	}
}

// Validate reports whether the configuration is usable.
func (c Config) Validate() error {
	var errs []error
	if c.VocabSize < len(SpecialTokens)+1 {
		errs = append(errs, fmt.Errorf("vocab_size %d too small", c.VocabSize))
	}
	if c.Dim < 1 || c.Heads < 1 || c.Dim%c.Heads != 0 {
		errs = append(errs, fmt.Errorf("dim %d must be a positive multiple of heads %d", c.Dim, c.Heads))
	}
	if c.Layers < 0 || c.Layers > 16 {
		errs = append(errs, fmt.Errorf("layers %d outside 0..16", c.Layers))
	}
	if c.Layers > 0 && c.FFNDim < 1 {
		errs = append(errs, fmt.Errorf("ffn_dim %d must be positive", c.FFNDim))
	}
	if c.PatchDim < 0 {
		errs = append(errs, fmt.Errorf("patch_dim %d negative", c.PatchDim))
	}
	if c.MaxContext < 1 || c.MaxContext > 1<<16 {
		errs = append(errs, fmt.Errorf("max_context %d outside 1..65536", c.MaxContext))
	}
	if c.MaxAction < 1 || c.MaxAction > 4096 {
		errs = append(errs, fmt.Errorf("max_action %d outside 1..4096", c.MaxAction))
	}
	return errors.Join(errs...)
}
