package storagetest

import (
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
)

func TestLocalConforms(t *testing.T) {
	Run(t, Backend{
		New: func(t *testing.T) lake.Storage {
			s, err := lake.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Reopen: func(t *testing.T, s lake.Storage) lake.Storage {
			r, err := lake.NewLocal(s.(*lake.Local).Root())
			if err != nil {
				t.Fatal(err)
			}
			return r
		},
	})
}
