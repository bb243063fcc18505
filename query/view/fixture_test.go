package view

import (
	"context"
	"testing"

	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/view/viewtest"
)

func words(string) (Decoder, error) { return viewtest.Words{}, nil }

func engineOf(t *testing.T, f *viewtest.Fixture) *query.Engine {
	t.Helper()
	e, err := query.Open(context.Background(), f.Lake, f.Snap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
