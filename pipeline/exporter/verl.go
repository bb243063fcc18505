package exporter

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/schemas"
)

// VerlOptions chooses what Verl writes.
type VerlOptions struct {
	// Batch, when set, writes the sampled batch of that iteration (one row
	// per pick, in rank order) instead of the whole task pool.
	Batch *int32
	// Segments writes the segments table as flat pre-tokenized training
	// items instead of prompts.
	Segments bool
}

// VerlReport says what Verl wrote.
type VerlReport struct {
	Snapshot string `json:"snapshot"`
	Out      string `json:"out"`
	Rows     int    `json:"rows"`
	Shape    string `json:"shape"` // pool, batch or segments
}

// rowsPerGroup fixes the row-group size so that output bytes never depend on
// buffering.
const rowsPerGroup = 4096

// DataSourcePrefix starts every data_source value; verl picks the reward
// function by data_source, so a user's reward function can match it.
const DataSourcePrefix = "cualake/"

var (
	messageType = arrow.StructOf(
		arrow.Field{Name: "role", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "content", Type: arrow.BinaryTypes.String})
	rewardModelType = arrow.StructOf(
		arrow.Field{Name: "style", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "ground_truth", Type: arrow.BinaryTypes.String})
	poolExtra = []arrow.Field{
		{Name: "split", Type: arrow.BinaryTypes.String},
		{Name: "index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "task_id", Type: arrow.BinaryTypes.String},
		{Name: "domain", Type: arrow.BinaryTypes.String},
		{Name: "app", Type: arrow.BinaryTypes.String},
		{Name: "instruction", Type: arrow.BinaryTypes.String},
		{Name: "setup", Type: arrow.BinaryTypes.String},
		{Name: "feasible", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "source", Type: arrow.BinaryTypes.String},
		{Name: "origin", Type: arrow.BinaryTypes.String},
	}
	batchExtra = []arrow.Field{
		{Name: "iteration", Type: arrow.PrimitiveTypes.Int32},
		{Name: "rank", Type: arrow.PrimitiveTypes.Int32},
		{Name: "channel", Type: arrow.BinaryTypes.String},
		{Name: "weight", Type: arrow.PrimitiveTypes.Float64},
	}
)

// VerlPromptSchema is the Arrow schema of a verl RL dataset as verl's data
// preprocessing scripts write it: data_source, prompt (chat messages),
// ability, reward_model {style, ground_truth} and extra_info {split, index,
// ...}; a batch export adds iteration, rank, channel and weight to
// extra_info.
func VerlPromptSchema(batch bool) *arrow.Schema {
	extra := append([]arrow.Field{}, poolExtra...)
	if batch {
		extra = append(extra, batchExtra...)
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "data_source", Type: arrow.BinaryTypes.String},
		{Name: "prompt", Type: arrow.ListOf(messageType)},
		{Name: "ability", Type: arrow.BinaryTypes.String},
		{Name: "reward_model", Type: rewardModelType},
		{Name: "extra_info", Type: arrow.StructOf(extra...)},
	}, nil)
}

// SegmentsSchema is the flat schema of pre-tokenized training items.
var SegmentsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "segment_id", Type: arrow.BinaryTypes.String},
	{Name: "trajectory_id", Type: arrow.BinaryTypes.String},
	{Name: "group_id", Type: arrow.BinaryTypes.String},
	{Name: "input_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	{Name: "loss_mask", Type: arrow.ListOf(arrow.PrimitiveTypes.Int8)},
	{Name: "logprobs", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
	{Name: "has_logprobs", Type: arrow.FixedWidthTypes.Boolean}, // false: the rollout recorded none; recompute them
	{Name: "advantage", Type: arrow.PrimitiveTypes.Float64},
	{Name: "reward", Type: arrow.PrimitiveTypes.Float64},
	{Name: "policy_version", Type: arrow.PrimitiveTypes.Int32},
}, nil)

// Verl writes snapshot m to the Parquet file out: the task pool (default),
// one iteration's batch, or the segments, by outfile's rules: a regular file
// is replaced atomically, a device or FIFO written through, and a directory
// or a path inside a lake refused.
func Verl(ctx context.Context, l *lake.Lake, m *lake.Manifest, out string, opts VerlOptions) (*VerlReport, error) {
	if opts.Segments && opts.Batch != nil {
		return nil, fmt.Errorf("export verl: --segments and --batch exclude each other")
	}
	shape := "pool"
	schema := VerlPromptSchema(false)
	switch {
	case opts.Segments:
		shape, schema = "segments", SegmentsSchema
		if _, ok := m.Tables[schemas.Segments.Name]; !ok {
			return nil, fmt.Errorf("export verl --segments: snapshot %s has no segments table (run the segment stage)", m.ID[:12])
		}
	case opts.Batch != nil:
		shape, schema = "batch", VerlPromptSchema(true)
	}
	rep := &VerlReport{Snapshot: m.ID, Out: out, Shape: shape}
	err := outfile.Write(out, func(w io.Writer) error { return writeVerl(ctx, l, m, w, schema, opts, rep) }, lakeRoots(l)...)
	if err != nil {
		return nil, fmt.Errorf("export verl: %w", err)
	}
	return rep, nil
}

// writeVerl writes the rows of rep.Shape to w as one Parquet file.
func writeVerl(ctx context.Context, l *lake.Lake, m *lake.Manifest, w io.Writer, schema *arrow.Schema, opts VerlOptions, rep *VerlReport) error {
	props := parquet.NewWriterProperties(
		parquet.WithCreatedBy("cualake version "+lake.CodeVersion),
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(rowsPerGroup))
	fw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	pending := 0
	flush := func() error {
		if pending == 0 {
			return nil
		}
		rec := rb.NewRecordBatch()
		defer rec.Release()
		pending = 0
		return fw.Write(rec)
	}
	add := func() error {
		rep.Rows++
		pending++
		if pending == rowsPerGroup {
			return flush()
		}
		return nil
	}
	switch rep.Shape {
	case "segments":
		err = lake.ScanTable(ctx, l, m, schemas.Segments, 1024, func(rows []schemas.Segment) error {
			for i := range rows {
				appendSegment(rb, &rows[i])
				if err := add(); err != nil {
					return err
				}
			}
			return nil
		})
	case "batch":
		err = writeBatch(ctx, l, m, *opts.Batch, rb, add)
	default:
		err = lake.ScanTable(ctx, l, m, schemas.Tasks, 1024, func(rows []schemas.Task) error {
			for i := range rows {
				appendPrompt(rb, &rows[i], int64(rep.Rows), nil)
				if err := add(); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil {
		err = flush()
	}
	if cerr := fw.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeBatch writes the picks of one iteration in rank order, each with its
// task's prompt.
func writeBatch(ctx context.Context, l *lake.Lake, m *lake.Manifest, iter int32, rb *array.RecordBuilder, add func() error) error {
	var picks []schemas.Batch
	err := lake.ScanTable(ctx, l, m, schemas.Batches, 4096, func(rows []schemas.Batch) error {
		for _, r := range rows {
			if r.Iteration == iter {
				picks = append(picks, r)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(picks) == 0 {
		return fmt.Errorf("snapshot %s has no batch for iteration %d", m.ID[:12], iter)
	}
	sort.Slice(picks, func(a, b int) bool { return picks[a].Rank < picks[b].Rank })
	need := map[string]*schemas.Task{}
	for _, p := range picks {
		need[p.TaskID] = nil
	}
	err = lake.ScanTable(ctx, l, m, schemas.Tasks, 1024, func(rows []schemas.Task) error {
		for i := range rows {
			if _, ok := need[rows[i].TaskID]; ok {
				t := rows[i]
				need[t.TaskID] = &t
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range picks {
		t := need[picks[i].TaskID]
		if t == nil {
			return fmt.Errorf("batch %d rank %d names task %s, which the snapshot lacks", iter, picks[i].Rank, picks[i].TaskID)
		}
		appendPrompt(rb, t, int64(i), &picks[i])
		if err := add(); err != nil {
			return err
		}
	}
	return nil
}

// appendPrompt adds one task as a verl prompt row: the instruction is the
// user message; the judge is the rule-style ground truth that cualake's
// environment reward evaluates.
func appendPrompt(rb *array.RecordBuilder, t *schemas.Task, index int64, pick *schemas.Batch) {
	rb.Field(0).(*array.StringBuilder).Append(DataSourcePrefix + t.Domain)
	pl := rb.Field(1).(*array.ListBuilder)
	pl.Append(true)
	msg := pl.ValueBuilder().(*array.StructBuilder)
	msg.Append(true)
	msg.FieldBuilder(0).(*array.StringBuilder).Append("user")
	msg.FieldBuilder(1).(*array.StringBuilder).Append(t.Instruction)
	ability := t.App
	if ability == "" {
		ability = t.Domain
	}
	rb.Field(2).(*array.StringBuilder).Append(ability)
	rm := rb.Field(3).(*array.StructBuilder)
	rm.Append(true)
	rm.FieldBuilder(0).(*array.StringBuilder).Append("rule")
	rm.FieldBuilder(1).(*array.StringBuilder).Append(t.Judge)
	ex := rb.Field(4).(*array.StructBuilder)
	ex.Append(true)
	split := t.Split
	if split == "" {
		split = "train"
	}
	str := func(i int, s string) { ex.FieldBuilder(i).(*array.StringBuilder).Append(s) }
	str(0, split)
	ex.FieldBuilder(1).(*array.Int64Builder).Append(index)
	str(2, t.TaskID)
	str(3, t.Domain)
	str(4, t.App)
	str(5, t.Instruction)
	str(6, t.Setup)
	ex.FieldBuilder(7).(*array.BooleanBuilder).Append(t.Feasible)
	str(8, t.Source)
	str(9, t.Origin)
	if pick != nil {
		ex.FieldBuilder(10).(*array.Int32Builder).Append(pick.Iteration)
		ex.FieldBuilder(11).(*array.Int32Builder).Append(pick.Rank)
		str(12, pick.Channel)
		ex.FieldBuilder(13).(*array.Float64Builder).Append(pick.Weight)
	}
}

func appendSegment(rb *array.RecordBuilder, s *schemas.Segment) {
	rb.Field(0).(*array.StringBuilder).Append(s.SegmentID)
	rb.Field(1).(*array.StringBuilder).Append(s.TrajectoryID)
	rb.Field(2).(*array.StringBuilder).Append(s.GroupID)
	ids := rb.Field(3).(*array.ListBuilder)
	ids.Append(true)
	ids.ValueBuilder().(*array.Int32Builder).AppendValues(s.InputIDs, nil)
	mask := rb.Field(4).(*array.ListBuilder)
	mask.Append(true)
	mask.ValueBuilder().(*array.Int8Builder).AppendValues(s.LossMask, nil)
	lp := rb.Field(5).(*array.ListBuilder)
	lp.Append(true)
	lp.ValueBuilder().(*array.Float32Builder).AppendValues(s.Logprobs, nil)
	rb.Field(6).(*array.BooleanBuilder).Append(s.HasLogprobs)
	rb.Field(7).(*array.Float64Builder).Append(s.Advantage)
	rb.Field(8).(*array.Float64Builder).Append(s.Reward)
	rb.Field(9).(*array.Int32Builder).Append(s.PolicyVersion)
}
