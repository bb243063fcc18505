package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/schemas"
)

// maxTreeText bounds an accessibility tree's text on a page.
const maxTreeText = 200 << 10

// stepView is one turn as the trajectory page shows it.
type stepView struct {
	Step       int32
	Anchor     string
	Actions    []actionView
	Response   string
	HasScreen  bool
	ImgSrc     string // screenshot URL; "" with a wireframe or nothing
	Wireframe  template.HTML
	Overlay    template.HTML
	Typed      []string // captions of typing and key actions, shown on the screen
	W, H       float64
	ScreenNote string
	Tree       string
	TreeNote   string
	Tokens     template.HTML
	TokenLabel string
	TokenNote  string
}

type actionView struct {
	Caption string
	Kind    string
	Raw     string
	Error   string
}

type verifView struct {
	schemas.Verification
	Criteria     []criterion
	CriteriaRaw  string
	EvidenceImgs []string
}

type criterion struct{ Criterion, Status, Evidence string }

func pretty(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return s
	}
	return string(b)
}

func ffmt(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}

func optf(f *float64) string {
	if f == nil {
		return "—"
	}
	return ffmt(*f)
}

var funcs = template.FuncMap{
	"pretty": pretty,
	"ffmt":   ffmt,
	"optf":   optf,
	"join":   strings.Join,
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
	"advs": func(xs []float64) string {
		if len(xs) == 0 {
			return "—"
		}
		var out []string
		for _, x := range xs {
			out = append(out, strconv.FormatFloat(x, 'f', 3, 64))
		}
		return strings.Join(out, ", ")
	},
}

var pages = template.Must(template.New("").Funcs(funcs).Parse(pageTemplates))

// pageData is what every page template gets.
type pageData struct {
	Title    string
	Kind     string
	Snapshot string
	Note     string
	links    Links
	Body     any
}

// Link is called from templates: the href of a page.
func (p pageData) Link(kind, id string) string { return p.links.Page(kind, id) }

func render(w io.Writer, name string, p pageData) error {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, p); err != nil {
		return fmt.Errorf("render %s page: %w", p.Kind, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// RenderTrajectory writes the trajectory page. blobs holds the blobs the
// page refers to (LoadBlobs of t.BlobHashes()); a missing one is said so on
// the page.
func RenderTrajectory(w io.Writer, t *Trajectory, blobs map[string]*Blob, o Options) error {
	body := struct {
		T         *Trajectory
		Judge     string
		Steps     []stepView
		Verifs    []verifView
		Marks     int
		TokenNote string
	}{T: t, Judge: pretty(t.Row.JudgeDetail), TokenNote: t.TokenNote}
	decoders := map[string]decoded{}
	for _, tu := range t.Turns {
		sv := turnView(tu, blobs, o, decoders, true)
		body.Marks += len(tu.Actions)
		body.Steps = append(body.Steps, sv)
	}
	for _, v := range t.Verifications {
		vv := verifView{Verification: v}
		var list []map[string]any
		if err := json.Unmarshal([]byte(v.Criteria), &list); err == nil {
			for _, c := range list {
				vv.Criteria = append(vv.Criteria, criterion{Criterion: anyText(c["criterion"]), Status: anyText(c["status"]), Evidence: anyText(c["evidence"])})
			}
		} else {
			vv.CriteriaRaw = v.Criteria
		}
		for _, h := range v.Evidence {
			if b := blobs[h]; b != nil {
				if src := o.Links.Blob(h, b.Mime); src != "" {
					vv.EvidenceImgs = append(vv.EvidenceImgs, src)
				}
			}
		}
		body.Verifs = append(body.Verifs, vv)
	}
	return render(w, "trajectory", pageData{Title: "Trajectory " + t.Row.TrajectoryID, Kind: KindTrajectory, Snapshot: o.Snapshot, Note: o.Note, links: o.Links, Body: body})
}

func anyText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

type decoded struct {
	dec Decoder
	err error
}

// turnView prepares one turn: its screen (screenshot, else the tree drawn
// as a wireframe), the actions drawn over it, and with full its response,
// tree outline and tokens.
func turnView(tu Turn, blobs map[string]*Blob, o Options, decoders map[string]decoded, full bool) stepView {
	first := tu.Actions[0]
	sv := stepView{Step: tu.Step, Anchor: fmt.Sprintf("step-%d", tu.Step), Response: first.Response}
	for _, a := range tu.Actions {
		sv.Actions = append(sv.Actions, actionView{Caption: Caption(a), Kind: a.ActionKind, Raw: a.RawAction, Error: a.ActionError})
		switch a.ActionKind {
		case "type", "key", "hotkey", "done", "fail", "wait":
			sv.Typed = append(sv.Typed, Caption(a))
		}
	}
	var tree *node
	var treeText []byte
	if h := first.A11y; h != "" {
		if b := blobs[h]; b != nil {
			treeText = b.Bytes
			tree, _ = parseTree(b.Bytes)
		} else {
			sv.TreeNote = "accessibility tree blob " + h + " is not in this snapshot"
		}
	}
	sc := screen{Grid, Grid}
	if h := first.Observation; h != "" {
		if b := blobs[h]; b != nil {
			sv.ImgSrc = o.Links.Blob(h, b.Mime)
			if b.Width > 0 && b.Height > 0 {
				sc = screen{float64(b.Width), float64(b.Height)}
			} else if tree != nil {
				if s, ok := tree.size(); ok {
					sc = s
				}
			}
			if sv.ImgSrc == "" {
				sv.ScreenNote = "observation " + h + " is a " + b.Mime + ", not an image"
			}
		} else {
			sv.ScreenNote = "screenshot blob " + h + " is not in this snapshot"
		}
	}
	if sv.ImgSrc == "" && tree != nil {
		if s, ok := tree.size(); ok {
			sc = s
		}
		sv.Wireframe = wireframe(tree, sc)
		if sv.ScreenNote == "" {
			sv.ScreenNote = "no screenshot recorded (a tree-only rollout): the accessibility tree the agent saw, drawn as boxes"
		}
	}
	if sv.ImgSrc == "" && tree == nil && sv.ScreenNote == "" {
		sv.ScreenNote = "no screenshot or accessibility tree recorded for this step"
	}
	sv.HasScreen = true
	sv.W, sv.H = sc.W, sc.H
	sv.Overlay = overlay(tu.Actions, sc)
	if !full {
		sv.Typed = nil // a thumbnail: the captions under it say it
		return sv
	}
	switch {
	case tree != nil:
		sv.Tree = outline(tree)
	case treeText != nil:
		sv.Tree = strings.ToValidUTF8(string(treeText), "\uFFFD")
	}
	if len(sv.Tree) > maxTreeText {
		sv.Tree = sv.Tree[:maxTreeText] + "\n… (cut at 200 KiB)"
	}
	if tu.Tokens != nil {
		s := tu.Segment
		d, ok := decoders[s.Tokenizer]
		if !ok {
			if o.Tokenizers == nil {
				d.err = fmt.Errorf("no tokenizer given")
			} else {
				d.dec, d.err = o.Tokenizers(s.Tokenizer)
			}
			decoders[s.Tokenizer] = d
		}
		if d.err != nil {
			sv.TokenNote = fmt.Sprintf("token ids shown undecoded: tokenizer %s: %v", s.Tokenizer, d.err)
		}
		sv.TokenLabel = fmt.Sprintf("segment %s (%s mode, item %d): tokens %d–%d of %d, %d trained here (%d trainable in the item, advantage %s)",
			s.ID, s.Mode, s.Index, tu.Tokens.Start, tu.Tokens.End, s.Tokens, tu.Tokens.End-tu.Tokens.Start, s.TrainableTokens, ffmt(s.Advantage))
		sv.Tokens = tokensHTML(tu.Tokens, d.dec)
	}
	return sv
}

// tokensHTML shows a turn's context tokens, then its trained tokens
// highlighted; each token's id is its tooltip.
func tokensHTML(tt *TurnTokens, dec Decoder) template.HTML {
	var b strings.Builder
	b.WriteString(`<div class="tokens">`)
	if tt.ContextSkipped > 0 {
		fmt.Fprintf(&b, `<span class="skip">… %d earlier context tokens …</span>`, tt.ContextSkipped)
	}
	write := func(ids []int32, class string) {
		for _, p := range pieces(ids, dec) {
			title := "id " + strconv.Itoa(int(p.ID))
			text := p.Text
			if p.Count > 1 {
				title += fmt.Sprintf(" ×%d", p.Count)
				text += fmt.Sprintf("×%d", p.Count)
			}
			if dec != nil && strings.TrimSpace(text) == "" && !strings.Contains(text, "\n") {
				text = strings.ReplaceAll(text, " ", "·")
			}
			fmt.Fprintf(&b, `<span class="%s" title="%s">%s</span>`, class, title, html.EscapeString(text))
		}
	}
	write(tt.Context, "tok")
	write(tt.Trained, "tok t")
	b.WriteString(`</div>`)
	return template.HTML(b.String())
}

// rolloutView is one column of the group page.
type rolloutView struct {
	R     Rollout
	Steps []stepView
}

// RenderGroup writes the group page: the rollouts side by side, each with
// its outcome, reward and advantage, then their steps aligned by turn.
func RenderGroup(w io.Writer, g *Group, blobs map[string]*Blob, o Options) error {
	body := struct {
		G        *Group
		Rollouts []rolloutView
		Rows     [][]*stepView
		Success  int
	}{G: g}
	maxTurns := 0
	for _, r := range g.Rollouts {
		rv := rolloutView{R: r}
		for _, tu := range r.Turns {
			rv.Steps = append(rv.Steps, turnView(tu, blobs, o, nil, false))
		}
		maxTurns = max(maxTurns, len(rv.Steps))
		if r.Row.Outcome == schemas.OutcomeSuccess {
			body.Success++
		}
		body.Rollouts = append(body.Rollouts, rv)
	}
	for i := 0; i < maxTurns; i++ {
		row := make([]*stepView, len(body.Rollouts))
		for k := range body.Rollouts {
			if i < len(body.Rollouts[k].Steps) {
				row[k] = &body.Rollouts[k].Steps[i]
			}
		}
		body.Rows = append(body.Rows, row)
	}
	return render(w, "group", pageData{Title: "Group " + g.ID, Kind: KindGroup, Snapshot: o.Snapshot, Note: o.Note, links: o.Links, Body: body})
}

// RenderTask writes the task page: instruction, setup, judge, the
// pass-rate history (a chart and the table) and links to its trajectories.
func RenderTask(w io.Writer, t *Task, o Options) error {
	body := struct {
		T     *Task
		Setup string
		Judge string
		Chart template.HTML
		Shown int
	}{T: t, Setup: pretty(t.Row.Setup), Judge: pretty(t.Row.Judge), Shown: len(t.Trajectories)}
	if len(t.PassRates) > 0 {
		res := &query.Result{Columns: []string{"iteration", "rate", "series"}, Types: []string{"INTEGER", "DOUBLE", "VARCHAR"}}
		for _, p := range t.PassRates {
			if p.Observed != nil {
				res.Rows = append(res.Rows, []any{int64(p.Iteration), *p.Observed, "observed"})
			}
			if p.EMA != nil {
				res.Rows = append(res.Rows, []any{int64(p.Iteration), *p.EMA, "EMA"})
			}
		}
		c, err := notebook.ParseChart(`line x=iteration y=rate series=series ylabel="pass rate"`)
		if err != nil {
			return err
		}
		fig, err := c.Render(res, "pass rate of "+t.Row.TaskID)
		if err != nil {
			return err
		}
		body.Chart = template.HTML(fig.SVG)
	}
	return render(w, "task", pageData{Title: "Task " + t.Row.TaskID, Kind: KindTask, Snapshot: o.Snapshot, Note: o.Note, links: o.Links, Body: body})
}

// sortedKeys is for deterministic iteration in callers.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
