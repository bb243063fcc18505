package audit

import (
	"context"
	"fmt"
	"math/big"

	"github.com/cualake/cualake/query"
)

// session runs the SQL of the audits that are aggregations over one
// snapshot, through the same confined read-only engine analysts use.
type session struct {
	e    *query.Engine
	kind string
}

func openSession(ctx context.Context, in Input, kind string) (*session, error) {
	e, err := query.Open(ctx, in.Lake, in.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", kind, err)
	}
	return &session{e: e, kind: kind}, nil
}

func (s *session) close() { s.e.Close() }

// rows runs stmt and returns the rows as maps by column name.
func (s *session) rows(ctx context.Context, what, stmt string) ([]row, error) {
	res, err := s.e.Query(ctx, stmt)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %s: %w", s.kind, what, err)
	}
	out := make([]row, len(res.Rows))
	for i, r := range res.Rows {
		m := make(row, len(r))
		for k, c := range res.Columns {
			m[c] = r[k]
		}
		out[i] = m
	}
	return out, nil
}

// row is one result row by column name, with typed accessors that read
// NULL as the zero value.
type row map[string]any

func (r row) int(col string) int64 {
	switch x := r[col].(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case uint64:
		return int64(x)
	case uint32:
		return int64(x)
	case float64:
		return int64(x)
	case *big.Int:
		return x.Int64()
	}
	return 0
}

func (r row) float(col string) float64 {
	switch x := r[col].(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case interface{ Float64() float64 }:
		return x.Float64()
	case nil:
		return 0
	}
	return float64(r.int(col))
}

func (r row) null(col string) bool { return r[col] == nil }

func (r row) str(col string) string {
	if s, ok := r[col].(string); ok {
		return s
	}
	if r[col] == nil {
		return ""
	}
	return fmt.Sprint(r[col])
}

func (r row) bool(col string) bool {
	b, _ := r[col].(bool)
	return b
}
