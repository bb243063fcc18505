package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/query/view"
	"github.com/cualake/cualake/schemas"
)

// Rows shown by the table browser and the SQL box.
const (
	tableRows = 50
	sqlRows   = 500
	logLimit  = 500
)

// ref is one ref of the lake: main, another head, a tag.
type ref struct{ Kind, Name, ID string }

func (s *Server) refs(r *http.Request) ([]ref, [][2]string, error) {
	ctx := r.Context()
	var out []ref
	head, err := s.lake.Head(ctx)
	if err != nil {
		return nil, nil, err
	}
	if head != "" {
		out = append(out, ref{"branch", lake.MainRef, head})
	}
	keys, err := s.lake.Storage().List(ctx, "refs/heads/")
	if err != nil {
		return nil, nil, err
	}
	for _, k := range keys {
		name := strings.TrimPrefix(k, "refs/heads/")
		if name == lake.MainRef {
			continue
		}
		b, err := s.lake.Storage().Get(ctx, k)
		if err != nil {
			return nil, nil, err
		}
		id, err := lake.ParseRef(k, b)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, ref{"branch", name, id})
	}
	tags, err := s.lake.Tags(ctx)
	if err != nil {
		return nil, nil, err
	}
	plain, runs := sortedTags(tags)
	for _, t := range plain {
		out = append(out, ref{"tag", t[0], t[1]})
	}
	return out, runs, nil
}

type logRow struct {
	Depth int
	M     *lake.Manifest
	Tags  []string
}

func (s *Server) logRows(r *http.Request, at string, limit int) ([]logRow, error) {
	log, err := s.lake.Log(r.Context(), at, limit)
	if err != nil {
		return nil, err
	}
	tags, err := s.lake.Tags(r.Context())
	if err != nil {
		return nil, err
	}
	byID := map[string][]string{}
	plain, _ := sortedTags(tags)
	for _, t := range plain {
		byID[t[1]] = append(byID[t[1]], t[0])
	}
	out := make([]logRow, len(log))
	for i, m := range log {
		out[i] = logRow{Depth: i, M: m, Tags: byID[m.ID]}
	}
	return out, nil
}

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	refs, runs, err := s.refs(r)
	if err != nil {
		fail(w, err)
		return
	}
	rows, err := s.logRows(r, "", 20)
	if err != nil {
		fail(w, err)
		return
	}
	page(w, "home", map[string]any{"Title": "cualake ui", "At": "", "Lake": s.lake.String(), "Refs": refs, "RunTags": runs, "Log": rows})
}

func (s *Server) log(w http.ResponseWriter, r *http.Request) {
	at := r.URL.Query().Get("at")
	rows, err := s.logRows(r, at, logLimit)
	if err != nil {
		fail(w, err)
		return
	}
	page(w, "log", map[string]any{"Title": "Snapshot log", "At": at, "Log": rows, "Limit": logLimit})
}

func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	id, err := s.lake.Resolve(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	m, err := s.lake.Snapshot(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	lineage, err := s.logRows(r, id, 0)
	if err != nil {
		fail(w, err)
		return
	}
	page(w, "snapshot", map[string]any{"Title": "Snapshot " + short(m.ID), "At": m.ID, "M": m, "Params": prettyJSON(m.Params),
		"Tables": m.TableNames(), "Lineage": lineage})
}

func prettyJSON(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

type tableRow struct {
	Name, Doc string
	Rows      int64
	Files     int
	Present   bool
}

func (s *Server) tables(w http.ResponseWriter, r *http.Request) {
	m, err := s.at(r)
	if err != nil {
		fail(w, err)
		return
	}
	var rows []tableRow
	for _, info := range schemas.All() {
		tf, ok := m.Tables[info.Name]
		rows = append(rows, tableRow{Name: info.Name, Doc: info.Doc, Rows: tf.Rows, Files: len(tf.Files), Present: ok})
	}
	page(w, "tables", map[string]any{"Title": "Tables of " + short(m.ID), "At": m.ID, "Tables": rows})
}

func (s *Server) table(w http.ResponseWriter, r *http.Request) {
	m, err := s.at(r)
	if err != nil {
		fail(w, err)
		return
	}
	name := r.PathValue("name")
	var info *schemas.Info
	for _, i := range schemas.All() {
		if i.Name == name {
			i := i
			info = &i
		}
	}
	if info == nil && name != "lake_snapshots" {
		fail(w, fmt.Errorf("table %q: %w", name, errNotFound))
		return
	}
	type col struct {
		Name, Type string
		Nullable   bool
	}
	var cols []col
	var sel []string
	if info != nil {
		for _, f := range info.Arrow().Fields() {
			cols = append(cols, col{f.Name, f.Type.String(), f.Nullable})
			if name == schemas.Blobs.Name && f.Name == "bytes" {
				sel = append(sel, "octet_length(bytes) AS bytes") // never ship blob bytes into a table
				continue
			}
			sel = append(sel, `"`+f.Name+`"`)
		}
	} else {
		sel = []string{"*"}
	}
	var res *query.Result
	var total int64
	err = s.withEngine(r.Context(), m, func(e *query.Engine) error {
		var err error
		if res, err = e.Query(r.Context(), fmt.Sprintf(`SELECT %s FROM "%s" LIMIT %d`, strings.Join(sel, ", "), name, tableRows)); err != nil {
			return err
		}
		cnt, err := e.Query(r.Context(), fmt.Sprintf(`SELECT count(*) FROM "%s"`, name))
		if err == nil && len(cnt.Rows) == 1 {
			if n, ok := cnt.Rows[0][0].(int64); ok {
				total = n
			}
		}
		return err
	})
	if err != nil {
		fail(w, err)
		return
	}
	doc := ""
	if info != nil {
		doc = info.Doc
	}
	page(w, "table", map[string]any{"Title": "Table " + name, "At": m.ID, "Name": name, "Doc": doc, "Columns": cols, "Total": total,
		"Result": template.HTML(notebook.ResultHTML(res, tableRows, view.IDLink(links{m.ID}))),
		"SQL":    fmt.Sprintf(`SELECT * FROM %s LIMIT %d`, name, tableRows)})
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// chartSpec builds a notebook chart directive from the SQL form's fields.
func chartSpec(q map[string][]string) (string, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	typ := get("chart")
	if typ == "" {
		return "", nil
	}
	spec := typ
	for _, k := range []string{"x", "y", "series"} {
		v := get(k)
		if v == "" {
			continue
		}
		for _, part := range strings.Split(v, ",") {
			if !identRE.MatchString(strings.TrimSpace(part)) {
				return "", fmt.Errorf("chart %s=%q: want column names: %w", k, v, errBadRequest)
			}
		}
		spec += " " + k + "=" + strings.ReplaceAll(v, " ", "")
	}
	return spec, nil
}

func (s *Server) sql(w http.ResponseWriter, r *http.Request) {
	m, err := s.at(r)
	if err != nil {
		fail(w, err)
		return
	}
	q := r.URL.Query()
	stmt := q.Get("q")
	data := map[string]any{"Title": "SQL", "At": m.ID, "Q": stmt, "Chart": q.Get("chart"), "X": q.Get("x"), "Y": q.Get("y"),
		"Series": q.Get("series"), "ChartTypes": notebook.ChartTypes}
	if strings.TrimSpace(stmt) == "" {
		if stmt == "" {
			data["Q"] = "SELECT outcome, count(*) AS n FROM trajectories GROUP BY 1 ORDER BY 1"
		}
		page(w, "sql", data)
		return
	}
	spec, err := chartSpec(q)
	if err != nil {
		fail(w, err)
		return
	}
	var res *query.Result
	qerr := s.withEngine(r.Context(), m, func(e *query.Engine) error {
		var err error
		res, err = e.Query(r.Context(), stmt)
		return err
	})
	if qerr != nil {
		data["Error"] = qerr.Error()
		page(w, "sql", data)
		return
	}
	data["Result"] = template.HTML(notebook.ResultHTML(res, sqlRows, view.IDLink(links{m.ID})))
	if spec != "" {
		c, err := notebook.ParseChart(spec)
		if err == nil {
			var fig *notebook.Figure
			if fig, err = c.Render(res, "result"); err == nil {
				data["Figure"] = template.HTML(fig.SVG)
				data["Points"] = fig.Points
				data["Note"] = fig.Note
			}
		}
		if err != nil {
			data["ChartError"] = err.Error()
		}
	}
	page(w, "sql", data)
}

func (s *Server) viewPage(w http.ResponseWriter, r *http.Request) {
	m, err := s.at(r)
	if err != nil {
		fail(w, err)
		return
	}
	kind, id := r.PathValue("kind"), r.PathValue("id")
	o := view.Options{Links: links{m.ID}, Snapshot: m.ID, Note: "Served live by cualake ui; `cualake view " + kind + " ID` writes the same page to disk."}
	if s.opt.Tokenizers != nil {
		o.Tokenizers = s.opt.Tokenizers(m)
	}
	var buf bytes.Buffer
	err = s.withEngine(r.Context(), m, func(e *query.Engine) error {
		switch kind {
		case view.KindTrajectory:
			t, err := view.LoadTrajectory(r.Context(), e, id)
			if err != nil {
				return err
			}
			blobs, err := view.LoadBlobs(r.Context(), e, t.BlobHashes())
			if err != nil {
				return err
			}
			return view.RenderTrajectory(&buf, t, blobs, o)
		case view.KindGroup:
			g, err := view.LoadGroup(r.Context(), e, id)
			if err != nil {
				return err
			}
			blobs, err := view.LoadBlobs(r.Context(), e, g.BlobHashes())
			if err != nil {
				return err
			}
			return view.RenderGroup(&buf, g, blobs, o)
		case view.KindTask:
			t, err := view.LoadTask(r.Context(), e, id)
			if err != nil {
				return err
			}
			return view.RenderTask(&buf, t, o)
		}
		return fmt.Errorf("page kind %q (want trajectory, group or task): %w", kind, errNotFound)
	})
	if err != nil {
		fail(w, err)
		return
	}
	withNav(w, buf.Bytes(), m.ID)
}

var hexRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// inlineMimes are served as themselves; anything else is a download, so a
// blob can never be a page of this origin.
var inlineMimes = map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true, "image/gif": true}

func (s *Server) blob(w http.ResponseWriter, r *http.Request) {
	hash := r.PathValue("hash")
	if !hexRE.MatchString(hash) {
		fail(w, fmt.Errorf("blob %q: want 64 lowercase hex digits: %w", hash, errBadRequest))
		return
	}
	m, err := s.at(r)
	if err != nil {
		fail(w, err)
		return
	}
	var b *view.Blob
	err = s.withEngine(r.Context(), m, func(e *query.Engine) error {
		blobs, err := view.LoadBlobs(r.Context(), e, []string{hash})
		b = blobs[hash]
		return err
	})
	if err != nil {
		fail(w, err)
		return
	}
	if b == nil {
		fail(w, fmt.Errorf("blob %s in snapshot %s: %w", hash, short(m.ID), errNotFound))
		return
	}
	mime := strings.ToLower(strings.TrimSpace(strings.Split(b.Mime, ";")[0]))
	switch {
	case inlineMimes[mime]:
		w.Header().Set("Content-Type", mime)
	case strings.HasPrefix(mime, "text/") || mime == "application/json":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="`+hash+`"`)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b.Bytes)))
	w.Write(b.Bytes)
}

func (s *Server) notebooks(w http.ResponseWriter, r *http.Request) {
	var names []string
	if s.opt.Notebooks != nil {
		names = s.opt.Notebooks()
	}
	page(w, "notebooks", map[string]any{"Title": "Notebooks", "At": r.URL.Query().Get("at"), "Names": names})
}

func (s *Server) notebook(w http.ResponseWriter, r *http.Request) {
	if s.opt.NotebookSource == nil {
		fail(w, fmt.Errorf("no notebooks: %w", errNotFound))
		return
	}
	name := r.PathValue("name")
	src, err := s.opt.NotebookSource(name)
	if err != nil {
		fail(w, fmt.Errorf("%v: %w", err, errNotFound))
		return
	}
	m, err := s.at(r)
	if err != nil {
		fail(w, err)
		return
	}
	var buf bytes.Buffer
	err = s.withEngine(r.Context(), m, func(e *query.Engine) error {
		rep, err := notebook.Run(r.Context(), e, notebook.Parse(name+".md", src))
		if err != nil {
			return err
		}
		return notebook.WriteHTMLWith(&buf, rep, notebook.HTMLOptions{IDLink: view.IDLink(links{m.ID})})
	})
	if err != nil {
		fail(w, err)
		return
	}
	withNav(w, buf.Bytes(), m.ID)
}
