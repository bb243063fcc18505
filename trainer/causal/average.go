package causal

import (
	"errors"
	"fmt"
	"slices"
)

// Average returns a model whose every weight is the mean of the models'
// (a uniform "soup" of checkpoints along one fine-tuning run, Wortsman et
// al., 2022; Polyak averaging over rounds). The models must be one
// architecture over one vocabulary: the same config, tokenizer, template
// tokens and id map, as the checkpoints of RFT rounds that continue each
// other are. The mean is taken in float64 in the models' order and rounded
// once, so the result depends on the weights alone.
func Average(models []*Model) (*Model, error) {
	if len(models) == 0 {
		return nil, errors.New("average causal models: none given")
	}
	first := models[0]
	sum := map[string][]float64{}
	for i, m := range models {
		if m.cfg != first.cfg || m.tokenizer != first.tokenizer || m.special != first.special || !slices.Equal(m.ids.Tokens(), first.ids.Tokens()) {
			return nil, fmt.Errorf("average causal models: model %d differs from model 0 in config, tokenizer, template tokens or id map (%+v, %d ids against %+v, %d ids)",
				i, m.cfg, m.ids.Size(), first.cfg, first.ids.Size())
		}
		w, err := m.Weights()
		if err != nil {
			return nil, fmt.Errorf("average causal models: model %d: %w", i, err)
		}
		for name, vs := range w {
			acc := sum[name]
			if acc == nil {
				acc = make([]float64, len(vs))
				sum[name] = acc
			}
			for k, v := range vs {
				acc[k] += float64(v)
			}
		}
	}
	mean := make(map[string][]float32, len(sum))
	for name, acc := range sum {
		out := make([]float32, len(acc))
		for k, v := range acc {
			out[k] = float32(v / float64(len(models)))
		}
		mean[name] = out
	}
	return build(first.cfg, first.ids, first.special, first.tokenizer, first.dev, mean)
}
