package causal

import (
	"strings"
	"testing"
)

// TestAverage: every weight of the soup is the mean of the models', rounded
// once to float32; the soup of one model is that model; models of another
// size cannot be averaged.
func TestAverage(t *testing.T) {
	a, b, c := testModel(t, 7), testModel(t, 8), testModel(t, 9)
	soup, err := Average([]*Model{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	defer soup.Close()
	wa, _ := a.Weights()
	wb, _ := b.Weights()
	wc, _ := c.Weights()
	ws, err := soup.Weights()
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != len(wa) || soup.Config() != a.Config() || soup.IDs().Size() != a.IDs().Size() {
		t.Fatalf("soup has %d weights and config %+v, want %d and %+v", len(ws), soup.Config(), len(wa), a.Config())
	}
	differ := 0
	for name, vs := range ws {
		for k, v := range vs {
			want := float32((float64(wa[name][k]) + float64(wb[name][k]) + float64(wc[name][k])) / 3)
			if v != want {
				t.Fatalf("%s[%d] = %v, want the mean %v", name, k, v, want)
			}
			if v != wa[name][k] {
				differ++
			}
		}
	}
	if differ == 0 {
		t.Fatal("the soup is model 0")
	}
	one, err := Average([]*Model{b})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if w1, _ := one.Weights(); !slicesEqual(w1["embed"], wb["embed"]) {
		t.Fatal("the soup of one model is not that model")
	}
	deeper := testModelLayers(t, 7, a.Config().Layers+1)
	if _, err := Average([]*Model{a, deeper}); err == nil || !strings.Contains(err.Error(), "model 1 differs") {
		t.Fatalf("averaged models of different depth: %v", err)
	}
	if _, err := Average(nil); err == nil {
		t.Fatal("averaged no models")
	}
}
