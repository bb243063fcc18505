package schemas

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// ArrowSchemaOf derives the Arrow schema of a row type from its fields and
// parquet tags, so the Go struct stays the only definition of a table. A test
// proves it equals the schema Arrow reads back from the Parquet files we
// write.
func ArrowSchemaOf(rt reflect.Type) *arrow.Schema {
	var fields []arrow.Field
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		name := columnName(f)
		if name == "" {
			continue
		}
		dt, nullable := arrowType(f.Type)
		if strings.Contains(f.Tag.Get("parquet"), ",optional") {
			nullable = true
		}
		fields = append(fields, arrow.Field{Name: name, Type: dt, Nullable: nullable})
	}
	return arrow.NewSchema(fields, nil)
}

func arrowType(t reflect.Type) (arrow.DataType, bool) {
	switch t.Kind() {
	case reflect.Pointer:
		dt, _ := arrowType(t.Elem())
		return dt, true
	case reflect.String:
		return arrow.BinaryTypes.String, false
	case reflect.Bool:
		return arrow.FixedWidthTypes.Boolean, false
	case reflect.Int8:
		return arrow.PrimitiveTypes.Int8, false
	case reflect.Int32:
		return arrow.PrimitiveTypes.Int32, false
	case reflect.Int64:
		return arrow.PrimitiveTypes.Int64, false
	case reflect.Float32:
		return arrow.PrimitiveTypes.Float32, false
	case reflect.Float64:
		return arrow.PrimitiveTypes.Float64, false
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return arrow.BinaryTypes.Binary, false
		}
		elem, _ := arrowType(t.Elem())
		return arrow.ListOfNonNullable(elem), false
	}
	panic(fmt.Sprintf("schemas: no Arrow type for Go type %s", t)) // programming error: caught by the schema test
}
