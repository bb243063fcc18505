package trainer

import "math"

// SurrogateLossRef is a pure-Go reference of SurrogateLoss over [B][L]
// slices (ref may be nil). It returns the loss, its gradient with respect to
// logp, and the statistics. It exists to test the tensor version and to
// document the objective in plain code.
func SurrogateLossRef(logp, old, ref, adv [][]float64, mask [][]uint8, cfg LossConfig) (loss float64, grad [][]float64, st LossStats) {
	weights, n := aggWeights(mask, cfg.Agg)
	grad = make([][]float64, len(logp))
	var ratioSum, lowN, highN, capN float64
	for b := range logp {
		grad[b] = make([]float64, len(logp[b]))
		for t := range logp[b] {
			w := weights[b][t]
			if mask[b][t] == 0 {
				continue
			}
			r := math.Exp(logp[b][t] - old[b][t])
			a := adv[b][t]
			rc := math.Min(r, cfg.RatioCap)
			rClip := math.Max(1-cfg.ClipLow, math.Min(1+cfg.ClipHigh, r))
			o1, o2 := rc*a, rClip*a
			// d(obj)/d(logp) = d(obj)/dr · r; each branch passes r·A where it is
			// not saturated (PyTorch's clamp passes gradient at the bounds).
			g1 := 0.0
			if r <= cfg.RatioCap {
				g1 = r * a
			}
			g2 := 0.0
			if r >= 1-cfg.ClipLow && r <= 1+cfg.ClipHigh {
				g2 = r * a
			}
			var obj, g float64
			switch {
			case o1 < o2:
				obj, g = o1, g1
			case o2 < o1:
				obj, g = o2, g2
			default: // torch.minimum splits the gradient on ties
				obj, g = o1, (g1+g2)/2
			}
			st.PolicyLoss += -obj * w
			grad[b][t] = -g * w
			if ref != nil {
				raw := ref[b][t] - logp[b][t]
				d := math.Max(-KLLogRatioBound, math.Min(KLLogRatioBound, raw))
				k3 := math.Exp(d) - d - 1
				kg := 1 - math.Exp(d) // d(k3)/d(logp)
				if raw < -KLLogRatioBound || raw > KLLogRatioBound || k3 > KLTokenBound {
					kg = 0 // a binding clamp passes no gradient
				}
				k3 = math.Min(k3, KLTokenBound)
				st.KL += k3 * w
				grad[b][t] += cfg.KLCoef * kg * w
			}
			ratioSum += r
			if a < 0 && r < 1-cfg.ClipLow {
				lowN++
			}
			if a > 0 && r > 1+cfg.ClipHigh {
				highN++
			}
			if r > cfg.RatioCap {
				capN++
			}
		}
	}
	st.Loss = st.PolicyLoss + cfg.KLCoef*st.KL
	st.Tokens = int(n)
	if n > 0 {
		st.RatioMean = ratioSum / n
		st.ClipFracLow, st.ClipFracHigh, st.CapFrac = lowN/n, highN/n, capN/n
	}
	return st.Loss, grad, st
}

// aggWeights returns each token's weight in the aggregated mean and the
// number of masked tokens.
func aggWeights(mask [][]uint8, agg Aggregation) ([][]float64, float64) {
	n, items := 0.0, 0.0
	for _, m := range mask {
		k := 0.0
		for _, v := range m {
			if v != 0 {
				k++
			}
		}
		n += k
		if k > 0 {
			items++
		}
	}
	w := make([][]float64, len(mask))
	for b, m := range mask {
		w[b] = make([]float64, len(m))
		k := 0.0
		for _, v := range m {
			if v != 0 {
				k++
			}
		}
		for t, v := range m {
			if v == 0 {
				continue
			}
			switch agg {
			case SeqMeanTokenMean:
				w[b][t] = 1 / (k * items)
			case ItemSumTokenMean:
				w[b][t] = 1 / k
			default:
				w[b][t] = 1 / n
			}
		}
	}
	return w, n
}

// CrossEntropyLossRef is a pure-Go reference of CrossEntropyLoss over
// logits [B][L][V]; it returns the loss and its gradient with respect to the
// logits.
func CrossEntropyLossRef(logits [][][]float64, targets [][]int32, mask [][]uint8) (float64, [][][]float64) {
	full := make([][]uint8, len(targets))
	for b, t := range targets {
		full[b] = make([]uint8, len(t))
		for k := range t {
			if mask == nil || mask[b] == nil || mask[b][k] != 0 {
				full[b][k] = 1
			}
		}
	}
	w, _ := aggWeights(full, TokenMean)
	loss := 0.0
	grad := make([][][]float64, len(logits))
	for b := range logits {
		grad[b] = make([][]float64, len(logits[b]))
		for t := range logits[b] {
			grad[b][t] = make([]float64, len(logits[b][t]))
			if t >= len(targets[b]) || full[b][t] == 0 {
				continue
			}
			row := logits[b][t]
			mx := math.Inf(-1)
			for _, v := range row {
				mx = math.Max(mx, v)
			}
			z := 0.0
			for _, v := range row {
				z += math.Exp(v - mx)
			}
			lse := mx + math.Log(z)
			tgt := targets[b][t]
			loss += -(row[tgt] - lse) * w[b][t]
			for v := range row {
				p := math.Exp(row[v] - lse)
				if int32(v) == tgt {
					p--
				}
				grad[b][t][v] = p * w[b][t]
			}
		}
	}
	return loss, grad
}
