//go:build tools

// Package tools pins module dependencies that are only used by later packages.
package tools

import (
	_ "github.com/apache/arrow-go/v18/arrow"
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/dlclark/regexp2"
	_ "github.com/duckdb/duckdb-go/v2"
	_ "github.com/goccy/go-yaml"
	_ "github.com/parquet-go/parquet-go"
	_ "github.com/sugarme/gotch"
	_ "github.com/urfave/cli/v2"
	_ "golang.org/x/image/font/basicfont"
	_ "golang.org/x/image/font/gofont/goregular"
	_ "golang.org/x/image/font/opentype"
)
