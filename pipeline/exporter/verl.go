package exporter

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

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
	// items instead of prompts (see SegmentsSchema); Images then says which
	// image data the rows carry (ImagesNone or ImagesInline).
	Segments bool
	Images   ImagesMode
	// TextOnly writes prompts without screenshots: no images column, no
	// <image> placeholder, no system prompt (the form before multimodal
	// rows).
	TextOnly bool
	// SkipWithoutImage leaves out tasks that have no screenshot (no rollout
	// in the lake, and not a simulator task) instead of failing; the
	// report counts them.
	SkipWithoutImage bool
}

// VerlReport says what Verl wrote.
type VerlReport struct {
	Snapshot string `json:"snapshot"`
	Out      string `json:"out"`
	Rows     int    `json:"rows"`
	Shape    string `json:"shape"` // pool, batch or segments
	// Images counts rows whose screenshot came from a rollout in the lake
	// and rows whose screenshot the simulator rendered; Skipped the tasks
	// left out for want of one (SkipWithoutImage).
	FromRollouts int `json:"images_from_rollouts,omitempty"`
	Rendered     int `json:"images_rendered,omitempty"`
	Skipped      int `json:"skipped_without_image,omitempty"`
}

// rowsPerGroup fixes the row-group size so that output bytes never depend on
// buffering; imageRowsPerGroup is the size for rows that carry images, as
// datasets writes image datasets in small row groups.
const (
	rowsPerGroup      = 4096
	imageRowsPerGroup = 100
)

// DataSourcePrefix starts every data_source value; verl picks the reward
// function by data_source, and its default_compute_score knows none of
// ours, so a custom reward function (examples/verl/cualake_reward.py) must
// be configured.
const DataSourcePrefix = "cualake/"

// ImageToken is the placeholder verl's RLHFDataset and LLaMA-Factory replace
// with an image, one per entry of the images column, in order.
const ImageToken = "<image>"

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
	imageExtra = []arrow.Field{
		{Name: "image_hash", Type: arrow.BinaryTypes.String},
		{Name: "image_source", Type: arrow.BinaryTypes.String},
		{Name: "seed", Type: arrow.PrimitiveTypes.Int64},
	}
	batchExtra = []arrow.Field{
		{Name: "iteration", Type: arrow.PrimitiveTypes.Int32},
		{Name: "rank", Type: arrow.PrimitiveTypes.Int32},
		{Name: "channel", Type: arrow.BinaryTypes.String},
		{Name: "weight", Type: arrow.PrimitiveTypes.Float64},
	}
)

// VerlPromptSchema is the Arrow schema of a text-only verl RL dataset as
// verl's data preprocessing scripts write it: data_source, prompt (chat
// messages), ability, reward_model {style, ground_truth} and extra_info
// {split, index, ...}; a batch export adds iteration, rank, channel and
// weight to extra_info.
func VerlPromptSchema(batch bool) *arrow.Schema { return verlSchema(batch, false) }

// VerlImageSchema is VerlPromptSchema in verl's multimodal form (its geo3k
// preprocessing): an images column, a list of Image {bytes, path}, after
// the prompt, and extra_info with the screenshot's hash, source and seed.
func VerlImageSchema(batch bool) *arrow.Schema { return verlSchema(batch, true) }

func verlSchema(batch, images bool) *arrow.Schema {
	extra := append([]arrow.Field{}, poolExtra...)
	if images {
		extra = append(extra, imageExtra...)
	}
	if batch {
		extra = append(extra, batchExtra...)
	}
	fields := []arrow.Field{
		{Name: "data_source", Type: arrow.BinaryTypes.String},
		{Name: "prompt", Type: arrow.ListOf(messageType)},
	}
	if images {
		fields = append(fields, arrow.Field{Name: "images", Type: arrow.ListOf(ImageType)})
	}
	fields = append(fields,
		arrow.Field{Name: "ability", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "reward_model", Type: rewardModelType},
		arrow.Field{Name: "extra_info", Type: arrow.StructOf(extra...)})
	return arrow.NewSchema(fields, nil)
}

// Verl writes snapshot m to the Parquet file out: the task pool (default),
// one iteration's batch, or the segments, by outfile's rules: a regular file
// is replaced atomically, a device or FIFO written through, and a directory
// or a path inside a lake refused. Everything the rows need (tables,
// screenshots) is checked before out is touched.
func Verl(ctx context.Context, l *lake.Lake, m *lake.Manifest, out string, opts VerlOptions) (*VerlReport, error) {
	rep, err := verl(ctx, l, m, out, opts)
	if err != nil {
		return nil, fmt.Errorf("export verl: %w", err)
	}
	return rep, nil
}

func verl(ctx context.Context, l *lake.Lake, m *lake.Manifest, out string, opts VerlOptions) (*VerlReport, error) {
	if opts.Segments && opts.Batch != nil {
		return nil, fmt.Errorf("--segments and --batch exclude each other")
	}
	if err := outfile.CheckOutsideLakes(out, lakeRoots(l)...); err != nil {
		return nil, err
	}
	rep := &VerlReport{Snapshot: m.ID, Out: out, Shape: "pool"}
	if opts.Segments {
		rep.Shape = "segments"
		if opts.Images == ImagesFiles {
			return nil, fmt.Errorf("--segments writes one file: --images files needs a folder (use cualake export segments)")
		}
		plan, err := planSegments(ctx, l, m, opts.Images)
		if err != nil {
			return nil, err
		}
		err = outfile.Write(out, func(w io.Writer) error {
			n, err := plan.write(ctx, w)
			rep.Rows = n
			return err
		}, lakeRoots(l)...)
		return rep, err
	}
	if opts.Batch != nil {
		rep.Shape = "batch"
	}
	rows, err := promptRows(ctx, l, m, opts.Batch)
	if err != nil {
		return nil, err
	}
	images := !opts.TextOnly
	schema := verlSchema(opts.Batch != nil, images)
	var shots map[string]*Screenshot
	var pixels map[string][]byte
	perRG := rowsPerGroup
	if images {
		tasks := make([]*schemas.Task, 0, len(rows))
		seen := map[string]bool{}
		for _, r := range rows {
			if !seen[r.task.TaskID] {
				seen[r.task.TaskID] = true
				tasks = append(tasks, r.task)
			}
		}
		if shots, err = TaskScreenshots(ctx, l, m, tasks, opts.SkipWithoutImage); err != nil {
			return nil, err
		}
		kept := rows[:0]
		for _, r := range rows {
			if shots[r.task.TaskID] == nil {
				rep.Skipped++
				continue
			}
			kept = append(kept, r)
		}
		rows = kept
		want, rendered := map[string]bool{}, map[string][]byte{}
		for _, s := range shots {
			want[s.Hash] = true
			if s.Bytes != nil {
				rendered[s.Hash] = s.Bytes
			}
		}
		bi, err := resolveImages(ctx, l, m, want, rendered)
		if err != nil {
			return nil, err
		}
		if pixels, err = bi.Bytes(ctx); err != nil {
			return nil, err
		}
		if schema, err = withHFMetadata(schema); err != nil {
			return nil, err
		}
		perRG = imageRowsPerGroup
	}
	err = outfile.Write(out, func(w io.Writer) error {
		tw, err := newTableWriter(w, schema, perRG)
		if err != nil {
			return err
		}
		for i, r := range rows {
			var shot *Screenshot
			if images {
				shot = shots[r.task.TaskID]
				if shot.Bytes != nil {
					rep.Rendered++
				} else {
					rep.FromRollouts++
				}
			}
			appendPrompt(tw, r.task, int64(i), r.pick, shot, pixels)
			if err := tw.Row(); err != nil {
				tw.Close()
				return err
			}
		}
		rep.Rows = tw.rows
		return tw.Close()
	}, lakeRoots(l)...)
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// promptRow is one prompt to write: a task, and the pick of a batch.
type promptRow struct {
	task *schemas.Task
	pick *schemas.Batch
}

// promptRows lists the tasks of the pool in table order, or the picks of
// one iteration in rank order with their tasks.
func promptRows(ctx context.Context, l *lake.Lake, m *lake.Manifest, iter *int32) ([]promptRow, error) {
	if _, ok := m.Tables[schemas.Tasks.Name]; !ok {
		return nil, fmt.Errorf("snapshot %s has no tasks table", m.ID[:12])
	}
	tasks, err := lake.ReadTable(ctx, l, m, schemas.Tasks)
	if err != nil {
		return nil, err
	}
	if iter == nil {
		out := make([]promptRow, len(tasks))
		for i := range tasks {
			out[i] = promptRow{task: &tasks[i]}
		}
		return out, nil
	}
	if _, ok := m.Tables[schemas.Batches.Name]; !ok {
		return nil, fmt.Errorf("snapshot %s has no batches table (run the sample stage)", m.ID[:12])
	}
	var picks []schemas.Batch
	err = lake.ScanTable(ctx, l, m, schemas.Batches, 4096, func(rows []schemas.Batch) error {
		for _, r := range rows {
			if r.Iteration == *iter {
				picks = append(picks, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(picks) == 0 {
		return nil, fmt.Errorf("snapshot %s has no batch for iteration %d", m.ID[:12], *iter)
	}
	sort.Slice(picks, func(a, b int) bool { return picks[a].Rank < picks[b].Rank })
	byID := make(map[string]*schemas.Task, len(tasks))
	for i := range tasks {
		byID[tasks[i].TaskID] = &tasks[i]
	}
	out := make([]promptRow, len(picks))
	for i := range picks {
		t := byID[picks[i].TaskID]
		if t == nil {
			return nil, fmt.Errorf("batch %d rank %d names task %s, which the tasks table lacks", *iter, picks[i].Rank, picks[i].TaskID)
		}
		out[i] = promptRow{task: t, pick: &picks[i]}
	}
	return out, nil
}

// appendPrompt adds one task as a verl prompt row: the judge is the
// rule-style ground truth that cualake's environment reward evaluates. With
// a screenshot, the prompt is the rollout policy's first context (its
// system prompt, then the task and <image>) and the images column holds the
// screenshot; without, the instruction alone is the user message.
func appendPrompt(tw *tableWriter, t *schemas.Task, index int64, pick *schemas.Batch, shot *Screenshot, pixels map[string][]byte) {
	domain, app := NormalizeName(t.Domain), NormalizeName(t.App)
	if app == "" {
		app = domain
	}
	col := 0
	next := func() array.Builder { b := tw.Field(col); col++; return b }
	next().(*array.StringBuilder).Append(DataSourcePrefix + domain)
	pl := next().(*array.ListBuilder)
	pl.Append(true)
	msg := pl.ValueBuilder().(*array.StructBuilder)
	addMsg := func(role, content string) {
		msg.Append(true)
		msg.FieldBuilder(0).(*array.StringBuilder).Append(role)
		msg.FieldBuilder(1).(*array.StringBuilder).Append(content)
	}
	if shot == nil {
		addMsg("user", t.Instruction)
	} else {
		addMsg("system", PolicySystemPrompt)
		addMsg("user", TaskIntro(t.Instruction, nil)+"\n"+ImageToken)
		il := next().(*array.ListBuilder)
		il.Append(true)
		appendImage(il.ValueBuilder().(*array.StructBuilder), pixels[shot.Hash], shot.Hash+".png")
	}
	next().(*array.StringBuilder).Append(domain)
	rm := next().(*array.StructBuilder)
	rm.Append(true)
	rm.FieldBuilder(0).(*array.StringBuilder).Append("rule")
	rm.FieldBuilder(1).(*array.StringBuilder).Append(t.Judge)
	ex := next().(*array.StructBuilder)
	ex.Append(true)
	split := t.Split
	if split == "" {
		split = "train"
	}
	f := 0
	field := func() array.Builder { b := ex.FieldBuilder(f); f++; return b }
	str := func(s string) { field().(*array.StringBuilder).Append(s) }
	str(split)
	field().(*array.Int64Builder).Append(index)
	str(t.TaskID)
	str(domain)
	str(app)
	str(t.Instruction)
	str(t.Setup)
	field().(*array.BooleanBuilder).Append(t.Feasible)
	str(t.Source)
	str(t.Origin)
	if shot != nil {
		str(shot.Hash)
		str(shot.Source)
		field().(*array.Int64Builder).Append(shot.Seed)
	}
	if pick != nil {
		field().(*array.Int32Builder).Append(pick.Iteration)
		field().(*array.Int32Builder).Append(pick.Rank)
		str(pick.Channel)
		field().(*array.Float64Builder).Append(pick.Weight)
	}
}
