package exporter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

// ErrNoImage is wrapped by errors for a task or step that has no screenshot
// to export.
var ErrNoImage = errors.New("no screenshot")

// Screenshot is a task's first observation: a blob of the lake (the first
// screenshot of one of its rollouts) or a PNG the simulator rendered of the
// task's initial state.
type Screenshot struct {
	Hash string
	// Bytes is set for a rendered screenshot; a lake blob's bytes are read
	// when the export writes them.
	Bytes []byte
	// Source is "rollout:<trajectory_id>" or "simdesk" (rendered).
	Source string
	// Seed is the environment seed of the state shown: the trajectory's, or
	// RenderSeed for a rendered one. A reward function that replays actions
	// must reset the environment with it for the coordinates to match.
	Seed int64
}

// RenderSeed is the simulator seed of rendered initial states.
const RenderSeed = 0

// SimdeskTask says whether the embedded simulator can show task t: a task
// of one of its apps that was not imported from another environment (an
// imported OSWorld task names programs of a real VM that the simulator
// would only pretend to be).
func SimdeskTask(t *schemas.Task) bool {
	if t.Source == schemas.SourceImported {
		return false
	}
	for _, a := range simdesk.Apps() {
		if t.Domain == a {
			return true
		}
	}
	return false
}

// RenderInitial renders the initial state of a simulator task: the desktop
// for RenderSeed at the default screen size with the task's setup applied.
func RenderInitial(t *schemas.Task) (*Screenshot, error) {
	d, err := simdesk.New(simdesk.DefaultWidth, simdesk.DefaultHeight, RenderSeed)
	if err != nil {
		return nil, err
	}
	if err := d.ApplySetup(t.Setup); err != nil {
		return nil, fmt.Errorf("task %s: render the initial state: %w", t.TaskID, err)
	}
	png, err := d.Screenshot()
	if err != nil {
		return nil, fmt.Errorf("task %s: render the initial state: %w", t.TaskID, err)
	}
	return &Screenshot{Hash: schemas.HashBytes(png), Bytes: png, Source: "simdesk", Seed: RenderSeed}, nil
}

// firstStep is the earliest step row seen of one trajectory.
type firstStep struct {
	step, sub int32
	obs       string
}

// FirstScreenshots returns the first screenshot in the lake of every task
// in want that has one: the observation of the first step of the task's
// trajectory with the smallest id whose first step recorded a screenshot.
func FirstScreenshots(ctx context.Context, l *lake.Lake, m *lake.Manifest, want map[string]bool) (map[string]*Screenshot, error) {
	out := map[string]*Screenshot{}
	if _, ok := m.Tables[schemas.Steps.Name]; !ok {
		return out, nil
	}
	trajTask := map[string]*schemas.Trajectory{}
	err := lake.ScanTable(ctx, l, m, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
		for i := range rows {
			if want[rows[i].TaskID] {
				t := rows[i]
				t.JudgeDetail, t.Error = "", ""
				trajTask[t.TrajectoryID] = &t
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	first := map[string]firstStep{}
	err = lake.ScanTable(ctx, l, m, schemas.Steps, 1024, func(rows []schemas.Step) error {
		for i := range rows {
			s := &rows[i]
			if trajTask[s.TrajectoryID] == nil {
				continue
			}
			f, seen := first[s.TrajectoryID]
			if !seen || s.Step < f.step || (s.Step == f.step && s.Sub < f.sub) {
				first[s.TrajectoryID] = firstStep{s.Step, s.Sub, s.Observation}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(first))
	for id := range first {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		tr := trajTask[id]
		if first[id].obs == "" || out[tr.TaskID] != nil {
			continue
		}
		out[tr.TaskID] = &Screenshot{Hash: first[id].obs, Source: "rollout:" + id, Seed: tr.Seed}
	}
	return out, nil
}

// TaskScreenshots returns every task's first screenshot: from its rollouts
// in the lake, else rendered by the simulator for a simulator task. A task
// with neither is an error naming it (wrapping ErrNoImage), unless skip is
// set, when it is left out of the map.
func TaskScreenshots(ctx context.Context, l *lake.Lake, m *lake.Manifest, tasks []*schemas.Task, skip bool) (map[string]*Screenshot, error) {
	want := map[string]bool{}
	for _, t := range tasks {
		want[t.TaskID] = true
	}
	out, err := FirstScreenshots(ctx, l, m, want)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, t := range tasks {
		if out[t.TaskID] != nil {
			continue
		}
		if !SimdeskTask(t) {
			missing = append(missing, t.TaskID)
			continue
		}
		s, err := RenderInitial(t)
		if err != nil {
			if skip {
				continue
			}
			return nil, fmt.Errorf("%w: %v", ErrNoImage, err)
		}
		out[t.TaskID] = s
	}
	if len(missing) > 0 && !skip {
		sort.Strings(missing)
		return nil, fmt.Errorf("%w for %d task(s) (%s): they have no rollout with a screenshot in snapshot %s and the simulator does not render them (not one of its apps, or imported); roll them out first, or export --text-only, or --skip-without-image",
			ErrNoImage, len(missing), listSome(missing, 5), m.ID[:12])
	}
	return out, nil
}

func listSome(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(", and %d more", len(xs)-n)
}

// blobMeta projects the blobs table on what naming an image file needs, so
// that checking a set of hashes never reads their bytes.
type blobMeta struct {
	Hash string `parquet:"hash"`
	Mime string `parquet:"mime"`
}

var blobMetaTable = &schemas.Table[blobMeta]{Name: schemas.Blobs.Name}

// imageExt is the file extension of an image mime type.
func imageExt(mime string) (string, bool) {
	ext, ok := map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}[mime]
	return ext, ok
}

// blobImages resolves image blobs of a snapshot by hash: their file names
// (hash plus the extension of their mime type) and, on demand, their bytes.
type blobImages struct {
	l     *lake.Lake
	m     *lake.Manifest
	names map[string]string // hash -> file name
	// rendered holds images that are not blobs of the lake.
	rendered map[string][]byte
}

// resolveImages checks that every hash of want is an image blob of the
// snapshot (or one of rendered) and names its file. A hash the blobs table
// lacks is an error naming it; a blob that is no image names its mime type.
// Nothing is written before this check, so a missing blob leaves no output.
func resolveImages(ctx context.Context, l *lake.Lake, m *lake.Manifest, want map[string]bool, rendered map[string][]byte) (*blobImages, error) {
	bi := &blobImages{l: l, m: m, names: map[string]string{}, rendered: rendered}
	lakeWant := map[string]bool{}
	for h := range want {
		if _, ok := rendered[h]; ok {
			bi.names[h] = h + ".png"
			continue
		}
		lakeWant[h] = true
	}
	if len(lakeWant) == 0 {
		return bi, nil
	}
	if _, ok := m.Tables[schemas.Blobs.Name]; !ok {
		return nil, fmt.Errorf("snapshot %s has no blobs table, so screenshot %s cannot be exported", m.ID[:12], someKey(lakeWant))
	}
	err := lake.ScanTable(ctx, l, m, blobMetaTable, 4096, func(rows []blobMeta) error {
		for _, r := range rows {
			if !lakeWant[r.Hash] {
				continue
			}
			ext, ok := imageExt(r.Mime)
			if !ok {
				return fmt.Errorf("blob %s is %s, not an image", r.Hash, r.Mime)
			}
			bi.names[r.Hash] = r.Hash + ext
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var missing []string
	for h := range lakeWant {
		if _, ok := bi.names[h]; !ok {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("screenshot blob %s is missing from the blobs table of snapshot %s (%d missing in all): %w",
			missing[0], m.ID[:12], len(missing), lake.ErrNotExist)
	}
	return bi, nil
}

func someKey(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[0]
}

// Name is the file name of an image resolved by resolveImages.
func (bi *blobImages) Name(hash string) string { return bi.names[hash] }

// Bytes loads the bytes of every resolved image in one scan of the blobs
// table.
func (bi *blobImages) Bytes(ctx context.Context) (map[string][]byte, error) {
	out := make(map[string][]byte, len(bi.names))
	want := map[string]bool{}
	for h := range bi.names {
		if b, ok := bi.rendered[h]; ok {
			out[h] = b
		} else {
			want[h] = true
		}
	}
	if len(want) == 0 {
		return out, nil
	}
	got, err := lake.BlobsByHash(ctx, bi.l, bi.m, want)
	if err != nil {
		return nil, err
	}
	for h, b := range got {
		out[h] = b
	}
	return out, nil
}

// WriteFiles writes every resolved image once into dir under its
// content-addressed name, streaming the blobs table.
func (bi *blobImages) WriteFiles(ctx context.Context, dir string) error {
	if len(bi.names) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	written := map[string]bool{}
	for h, b := range bi.rendered {
		if _, ok := bi.names[h]; !ok {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, bi.names[h]), b, 0o666); err != nil {
			return err
		}
		written[h] = true
	}
	err := lake.ScanTable(ctx, bi.l, bi.m, schemas.Blobs, 64, func(rows []schemas.Blob) error {
		for i := range rows {
			h := rows[i].Hash
			name, ok := bi.names[h]
			if !ok || written[h] {
				continue
			}
			if got := schemas.HashBytes(rows[i].Bytes); got != h {
				return fmt.Errorf("blob %s: its bytes hash to %s: %w", h, got, lake.ErrCorrupt)
			}
			if err := os.WriteFile(filepath.Join(dir, name), rows[i].Bytes, 0o666); err != nil {
				return err
			}
			written[h] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	for h := range bi.names {
		if !written[h] {
			return fmt.Errorf("screenshot blob %s is missing from the blobs table of snapshot %s: %w", h, bi.m.ID[:12], lake.ErrNotExist)
		}
	}
	return nil
}
