package exporter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/cualake/cualake/pipeline/lake"
)

// ImageType is Hugging Face datasets' Image feature as it is stored in
// Arrow and Parquet: struct<bytes: binary, path: string>, either field null.
// verl's preprocessing scripts write their images column as a list of it.
var ImageType = arrow.StructOf(
	arrow.Field{Name: "bytes", Type: arrow.BinaryTypes.Binary, Nullable: true},
	arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true})

// HFMetadataKey is the Parquet key-value metadata entry (the Arrow schema
// metadata) where Hugging Face datasets stores and reads a file's features.
const HFMetadataKey = "huggingface"

// HFFeatures returns the features JSON datasets writes under
// HFMetadataKey for schema: {"info": {"features": {...}}}, columns in
// schema order. An ImageType column is {"_type": "Image"}, a scalar
// {"dtype": ..., "_type": "Value"}, a list the JSON list [feature] (the
// form every datasets version reads: 2.x and 3.x as Sequence, 4.x as List),
// a struct an object of its fields.
func HFFeatures(schema *arrow.Schema) (string, error) {
	var b bytes.Buffer
	b.WriteString(`{"info":{"features":{`)
	for i, f := range schema.Fields() {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, f.Name)
		b.WriteByte(':')
		if err := writeFeature(&b, f.Type); err != nil {
			return "", fmt.Errorf("column %s: %w", f.Name, err)
		}
	}
	b.WriteString(`}}}`)
	return b.String(), nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}

func writeFeature(b *bytes.Buffer, t arrow.DataType) error {
	if arrow.TypeEqual(t, ImageType) {
		b.WriteString(`{"_type":"Image"}`)
		return nil
	}
	switch t := t.(type) {
	case *arrow.ListType:
		b.WriteByte('[')
		if err := writeFeature(b, t.Elem()); err != nil {
			return err
		}
		b.WriteByte(']')
		return nil
	case *arrow.StructType:
		b.WriteByte('{')
		for i, f := range t.Fields() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, f.Name)
			b.WriteByte(':')
			if err := writeFeature(b, f.Type); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
		b.WriteByte('}')
		return nil
	}
	dtype, ok := map[arrow.Type]string{
		arrow.BOOL: "bool", arrow.INT8: "int8", arrow.INT16: "int16", arrow.INT32: "int32", arrow.INT64: "int64",
		arrow.UINT8: "uint8", arrow.UINT16: "uint16", arrow.UINT32: "uint32", arrow.UINT64: "uint64",
		arrow.FLOAT32: "float32", arrow.FLOAT64: "float64", arrow.STRING: "string", arrow.BINARY: "binary",
		arrow.DATE32: "date32",
	}[t.ID()]
	if t.ID() == arrow.TIMESTAMP {
		ts := t.(*arrow.TimestampType)
		if ts.TimeZone != "" {
			return fmt.Errorf("timestamps with a time zone have no features form here")
		}
		dtype, ok = "timestamp["+ts.Unit.String()+"]", true
	}
	if !ok {
		return fmt.Errorf("type %s has no Hugging Face Value form", t)
	}
	b.WriteString(`{"dtype":"` + dtype + `","_type":"Value"}`)
	return nil
}

// withHFMetadata returns schema with its Hugging Face features attached as
// schema metadata, which the Parquet writer stores as key-value metadata.
func withHFMetadata(schema *arrow.Schema) (*arrow.Schema, error) {
	feats, err := HFFeatures(schema)
	if err != nil {
		return nil, err
	}
	md := arrow.NewMetadata([]string{HFMetadataKey}, []string{feats})
	return arrow.NewSchema(schema.Fields(), &md), nil
}

// tableWriter writes rows of one schema as one Parquet file: records are
// built in a RecordBuilder and flushed every rows rows, so row groups (and
// the output bytes) never depend on buffering.
type tableWriter struct {
	fw      *pqarrow.FileWriter
	rb      *array.RecordBuilder
	perRG   int
	pending int
	rows    int
}

// newTableWriter starts a Parquet file on w: zstd, rowsPerRG rows per row
// group, created_by naming cualake's version, the Arrow schema stored.
func newTableWriter(w io.Writer, schema *arrow.Schema, rowsPerRG int) (*tableWriter, error) {
	props := parquet.NewWriterProperties(
		parquet.WithCreatedBy("cualake version "+lake.CodeVersion),
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(int64(rowsPerRG)))
	fw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	return &tableWriter{fw: fw, rb: array.NewRecordBuilder(memory.DefaultAllocator, schema), perRG: rowsPerRG}, nil
}

// Field returns the builder of column i.
func (t *tableWriter) Field(i int) array.Builder { return t.rb.Field(i) }

// Row counts one appended row and flushes a full row group.
func (t *tableWriter) Row() error {
	t.rows++
	t.pending++
	if t.pending == t.perRG {
		return t.flush()
	}
	return nil
}

func (t *tableWriter) flush() error {
	if t.pending == 0 {
		return nil
	}
	rec := t.rb.NewRecordBatch()
	defer rec.Release()
	t.pending = 0
	return t.fw.Write(rec)
}

// Close flushes the last rows and writes the footer; it does not close the
// underlying writer beyond what pqarrow does with an io.Closer (callers pass
// writers that hide Close).
func (t *tableWriter) Close() error {
	err := t.flush()
	if cerr := t.fw.Close(); err == nil {
		err = cerr
	}
	t.rb.Release()
	return err
}

// appendImage adds one Image value: bytes and path, either may be absent.
func appendImage(b *array.StructBuilder, data []byte, path string) {
	b.Append(true)
	bb := b.FieldBuilder(0).(*array.BinaryBuilder)
	if data == nil {
		bb.AppendNull()
	} else {
		bb.Append(data)
	}
	pb := b.FieldBuilder(1).(*array.StringBuilder)
	if path == "" {
		pb.AppendNull()
	} else {
		pb.Append(path)
	}
}
