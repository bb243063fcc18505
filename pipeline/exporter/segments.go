package exporter

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/schemas"
)

// ImagesMode says what image data a segments export carries besides the
// screenshots' blob hashes (image_hashes, always there).
type ImagesMode string

// Image modes.
const (
	// ImagesNone: hashes only; fetch the PNGs with `cualake blob get`.
	ImagesNone ImagesMode = "none"
	// ImagesInline: an images column, a list of Image {bytes, path}.
	ImagesInline ImagesMode = "inline"
	// ImagesFiles: the PNGs written once into images/ beside the Parquet
	// file, and an image_paths column of paths relative to the folder.
	ImagesFiles ImagesMode = "files"
)

// ParseImagesMode reads inline, files or none.
func ParseImagesMode(s string) (ImagesMode, error) {
	switch m := ImagesMode(s); m {
	case ImagesNone, ImagesInline, ImagesFiles:
		return m, nil
	}
	return "", fmt.Errorf("--images %q: want inline, files or none", s)
}

// segmentRowsPerGroup bounds a row group of segments (each thousands of
// tokens); with inline images, fewer rows.
const (
	segmentRowsPerGroup      = 256
	segmentImageRowsPerGroup = 32
	segmentsFile             = "segments.parquet"
	imagesDir                = "images"
)

// SegmentsSchema is the schema of a segments export: every field of the
// segments table a trainer needs, prompt_length and response_length (the
// split slime's Sample expects), the screenshots of each item in order as
// blob hashes, and, by mode, their paths or an images column of Image
// structs. logprobs is null in rows whose rollout recorded none
// (has_logprobs false).
func SegmentsSchema(mode ImagesMode) *arrow.Schema {
	i32, str := arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String
	fields := []arrow.Field{
		{Name: "segment_id", Type: str},
		{Name: "trajectory_id", Type: str},
		{Name: "task_id", Type: str},
		{Name: "group_id", Type: str},
		{Name: "index", Type: i32},
		{Name: "mode", Type: str},
		{Name: "input_ids", Type: arrow.ListOf(i32)},
		{Name: "loss_mask", Type: arrow.ListOf(arrow.PrimitiveTypes.Int8)},
		{Name: "logprobs", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "has_logprobs", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "prompt_length", Type: i32},
		{Name: "response_length", Type: i32},
		{Name: "tokens", Type: i32},
		{Name: "trainable_tokens", Type: i32},
		{Name: "image_count", Type: i32},
		{Name: "image_tokens", Type: i32},
		{Name: "first_step", Type: i32},
		{Name: "last_step", Type: i32},
		{Name: "trajectory_steps", Type: i32},
		{Name: "reward", Type: arrow.PrimitiveTypes.Float64},
		{Name: "advantage", Type: arrow.PrimitiveTypes.Float64},
		{Name: "policy_version", Type: i32},
		{Name: "tokenizer", Type: str},
		{Name: "image_hashes", Type: arrow.ListOf(str)},
	}
	switch mode {
	case ImagesFiles:
		fields = append(fields, arrow.Field{Name: "image_paths", Type: arrow.ListOf(str)})
	case ImagesInline:
		fields = append(fields, arrow.Field{Name: "images", Type: arrow.ListOf(ImageType)})
	}
	return arrow.NewSchema(fields, nil)
}

// turnObs is one turn of a trajectory: its step number and the screenshot
// of its first action row.
type turnObs struct {
	step, sub int32
	obs       string
}

// segmentPlan is a checked segments export: every item's screenshots are
// known and, for inline and files, every blob exists.
type segmentPlan struct {
	l      *lake.Lake
	m      *lake.Manifest
	mode   ImagesMode
	turns  map[string][]turnObs // trajectory -> turns in step order
	images *blobImages
	pixels map[string][]byte
	schema *arrow.Schema
	rows   int
}

// planSegments checks a snapshot for a segments export: the segments and
// steps tables exist, each item's screenshots can be found from its
// trajectory's turns, and (inline, files) every screenshot blob exists.
func planSegments(ctx context.Context, l *lake.Lake, m *lake.Manifest, mode ImagesMode) (*segmentPlan, error) {
	if mode == "" {
		mode = ImagesNone
	}
	for _, t := range []string{schemas.Segments.Name, schemas.Steps.Name} {
		if _, ok := m.Tables[t]; !ok {
			return nil, fmt.Errorf("snapshot %s has no %s table (run the rollout and segment stages)", m.ID[:12], t)
		}
	}
	p := &segmentPlan{l: l, m: m, mode: mode, turns: map[string][]turnObs{}}
	rows := map[string][]turnObs{}
	err := lake.ScanTable(ctx, l, m, schemas.Steps, 1024, func(rs []schemas.Step) error {
		for i := range rs {
			s := &rs[i]
			rows[s.TrajectoryID] = append(rows[s.TrajectoryID], turnObs{s.Step, s.Sub, s.Observation})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for id, rs := range rows {
		sort.Slice(rs, func(a, b int) bool {
			if rs[a].step != rs[b].step {
				return rs[a].step < rs[b].step
			}
			return rs[a].sub < rs[b].sub
		})
		var turns []turnObs
		for _, r := range rs {
			if len(turns) == 0 || turns[len(turns)-1].step != r.step {
				turns = append(turns, r)
			}
		}
		p.turns[id] = turns
	}
	want := map[string]bool{}
	err = lake.ScanTable(ctx, l, m, schemas.Segments, 256, func(rs []schemas.Segment) error {
		for i := range rs {
			hashes, err := p.imagesOf(&rs[i])
			if err != nil {
				return err
			}
			for k, h := range hashes {
				if mode != ImagesNone && h == "" {
					return fmt.Errorf("segment %s: trajectory %q step %d recorded no screenshot, so --images %s has nothing to write (use --images none)",
						rs[i].SegmentID, rs[i].TrajectoryID, p.stepOfImage(&rs[i], k), mode)
				}
				want[h] = true
			}
			p.rows++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if mode != ImagesNone {
		if p.images, err = resolveImages(ctx, l, m, want, nil); err != nil {
			return nil, err
		}
		if mode == ImagesInline {
			if p.pixels, err = p.images.Bytes(ctx); err != nil {
				return nil, err
			}
		}
	}
	if p.schema, err = withHFMetadata(SegmentsSchema(mode)); err != nil {
		return nil, err
	}
	return p, nil
}

// imagesOf returns the screenshots of a segment in order. Whatever the mode
// (trajectory, step, window), an item holds the screenshots of a run of
// consecutive turns ending at its last trained turn (older turns are
// summaries without screenshots), so they are the images of the turns
// ending at last_step.
func (p *segmentPlan) imagesOf(s *schemas.Segment) ([]string, error) {
	turns, ok := p.turns[s.TrajectoryID]
	if !ok {
		return nil, fmt.Errorf("segment %s: trajectory %q has no steps in snapshot %s", s.SegmentID, s.TrajectoryID, p.m.ID[:12])
	}
	if int32(len(turns)) != s.TrajectorySteps {
		return nil, fmt.Errorf("segment %s: trajectory %q has %d turns in the steps table, the segment says %d (segments of other steps?)",
			s.SegmentID, s.TrajectoryID, len(turns), s.TrajectorySteps)
	}
	last := sort.Search(len(turns), func(i int) bool { return turns[i].step >= s.LastStep })
	if last == len(turns) || turns[last].step != s.LastStep {
		return nil, fmt.Errorf("segment %s: trajectory %q has no step %d (its last_step)", s.SegmentID, s.TrajectoryID, s.LastStep)
	}
	n := int(s.Images)
	if n < 0 || n > last+1 {
		return nil, fmt.Errorf("segment %s: %d images, but trajectory %q has %d turns up to step %d", s.SegmentID, n, s.TrajectoryID, last+1, s.LastStep)
	}
	out := make([]string, n)
	for k := range out {
		out[k] = turns[last-n+1+k].obs
	}
	return out, nil
}

// stepOfImage is the step number of a segment's k-th screenshot.
func (p *segmentPlan) stepOfImage(s *schemas.Segment, k int) int32 {
	turns := p.turns[s.TrajectoryID]
	last := sort.Search(len(turns), func(i int) bool { return turns[i].step >= s.LastStep })
	return turns[last-int(s.Images)+1+k].step
}

// write writes the segments as one Parquet file.
func (p *segmentPlan) write(ctx context.Context, w io.Writer) (int, error) {
	perRG := segmentRowsPerGroup
	if p.mode == ImagesInline {
		perRG = segmentImageRowsPerGroup
	}
	tw, err := newTableWriter(w, p.schema, perRG)
	if err != nil {
		return 0, err
	}
	err = lake.ScanTable(ctx, p.l, p.m, schemas.Segments, 256, func(rs []schemas.Segment) error {
		for i := range rs {
			hashes, err := p.imagesOf(&rs[i])
			if err != nil {
				return err
			}
			p.appendSegment(tw, &rs[i], hashes)
			if err := tw.Row(); err != nil {
				return err
			}
		}
		return nil
	})
	n := tw.rows
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func (p *segmentPlan) appendSegment(tw *tableWriter, s *schemas.Segment, hashes []string) {
	col := 0
	next := func() array.Builder { b := tw.Field(col); col++; return b }
	str := func(v string) { next().(*array.StringBuilder).Append(v) }
	i32 := func(v int32) { next().(*array.Int32Builder).Append(v) }
	str(s.SegmentID)
	str(s.TrajectoryID)
	str(s.TaskID)
	str(s.GroupID)
	i32(s.Index)
	str(s.Mode)
	ids := next().(*array.ListBuilder)
	ids.Append(true)
	ids.ValueBuilder().(*array.Int32Builder).AppendValues(s.InputIDs, nil)
	mask := next().(*array.ListBuilder)
	mask.Append(true)
	mask.ValueBuilder().(*array.Int8Builder).AppendValues(s.LossMask, nil)
	lp := next().(*array.ListBuilder)
	if s.HasLogprobs {
		lp.Append(true)
		lp.ValueBuilder().(*array.Float32Builder).AppendValues(s.Logprobs, nil)
	} else {
		lp.AppendNull() // none recorded: a trainer must recompute them, never read zeros
	}
	next().(*array.BooleanBuilder).Append(s.HasLogprobs)
	prompt := int32(len(s.LossMask))
	for i, m := range s.LossMask {
		if m == 1 {
			prompt = int32(i)
			break
		}
	}
	i32(prompt)
	i32(int32(len(s.InputIDs)) - prompt)
	i32(s.Tokens)
	i32(s.TrainableTokens)
	i32(s.Images)
	i32(s.ImageTokens)
	i32(s.FirstStep)
	i32(s.LastStep)
	i32(s.TrajectorySteps)
	next().(*array.Float64Builder).Append(s.Reward)
	next().(*array.Float64Builder).Append(s.Advantage)
	i32(s.PolicyVersion)
	str(s.Tokenizer)
	hl := next().(*array.ListBuilder)
	hl.Append(true)
	hl.ValueBuilder().(*array.StringBuilder).AppendValues(hashes, nil)
	switch p.mode {
	case ImagesFiles:
		pl := next().(*array.ListBuilder)
		pl.Append(true)
		for _, h := range hashes {
			pl.ValueBuilder().(*array.StringBuilder).Append(imagesDir + "/" + p.images.Name(h))
		}
	case ImagesInline:
		il := next().(*array.ListBuilder)
		il.Append(true)
		for _, h := range hashes {
			appendImage(il.ValueBuilder().(*array.StructBuilder), p.pixels[h], p.images.Name(h))
		}
	}
}

// SegmentsOptions chooses what Segments writes.
type SegmentsOptions struct {
	Images ImagesMode // default ImagesFiles
}

// SegmentsReport says what Segments wrote.
type SegmentsReport struct {
	Snapshot string     `json:"snapshot"`
	Dir      string     `json:"dir"`
	Rows     int        `json:"rows"`
	Images   ImagesMode `json:"images"`
	// ImageFiles counts the PNGs written (files mode).
	ImageFiles int `json:"image_files"`
}

// Segments writes the segments of snapshot m into the folder dir:
// segments.parquet (SegmentsSchema) and, in files mode, images/<hash>.png,
// each screenshot once. dir must be absent or empty and outside any lake;
// it is staged beside and renamed into place, so a failure leaves nothing.
func Segments(ctx context.Context, l *lake.Lake, m *lake.Manifest, dir string, opts SegmentsOptions) (*SegmentsReport, error) {
	mode := opts.Images
	if mode == "" {
		mode = ImagesFiles
	}
	rep := &SegmentsReport{Snapshot: m.ID, Dir: dir, Images: mode}
	if err := outfile.CheckOutsideLakes(dir, lakeRoots(l)...); err != nil {
		return nil, fmt.Errorf("export segments: %w", err)
	}
	plan, err := planSegments(ctx, l, m, mode)
	if err != nil {
		return nil, fmt.Errorf("export segments: %w", err)
	}
	err = outfile.WriteDir(dir, func(tmp string) error {
		f, err := os.OpenFile(filepath.Join(tmp, segmentsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err != nil {
			return err
		}
		rep.Rows, err = plan.write(ctx, struct{ io.Writer }{f})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if mode == ImagesFiles {
			rep.ImageFiles = len(plan.images.names)
			return plan.images.WriteFiles(ctx, filepath.Join(tmp, imagesDir))
		}
		return nil
	}, lakeRoots(l)...)
	if err != nil {
		return nil, fmt.Errorf("export segments: %w", err)
	}
	return rep, nil
}
