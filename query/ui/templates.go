package ui

import (
	"html/template"
	"net/url"
	"strings"
)

var pageTmpl = template.Must(template.New("ui").Funcs(template.FuncMap{
	"short": short,
	"q":     url.QueryEscape,
	"p":     url.PathEscape,
	"join":  strings.Join,
	"clip": func(s string, n int) string {
		if r := []rune(s); len(r) > n {
			return string(r[:n-1]) + "…"
		}
		return s
	},
}).Parse(templates))

const templates = `
{{define "navbar"}}<nav class="ui-nav" style="font: 13px system-ui, sans-serif; background: #111827; color: #e5e7eb; padding: 6px 16px; display: flex; gap: 14px; align-items: baseline; position: sticky; top: 0; z-index: 10">
<strong style="color: #fff">cualake ui</strong>
<a style="color: #93c5fd" href="/">refs</a>
<a style="color: #93c5fd" href="/log?at={{q .At}}">log</a>
<a style="color: #93c5fd" href="/tables?at={{q .At}}">tables</a>
<a style="color: #93c5fd" href="/sql?at={{q .At}}">SQL</a>
<a style="color: #93c5fd" href="/notebooks?at={{q .At}}">notebooks</a>
{{if .At}}<span style="margin-left: auto; color: #9ca3af">at <code title="{{.At}}">{{short .At}}</code></span>{{end}}
</nav>{{end}}

{{define "head"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1d1d1f; margin: 0; background: #f6f7f9; }
main { padding: 12px 24px 32px; }
h1 { font-size: 20px; margin: 8px 0 10px; } h2 { font-size: 15px; margin: 18px 0 6px; }
code, pre, textarea { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: #f0f2f5; padding: 8px 10px; border-radius: 6px; overflow: auto; white-space: pre-wrap; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; background: #fff; }
th, td { border-bottom: 1px solid #e6e8eb; padding: 3px 9px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.null { color: #9aa1a9; font-style: italic; }
.tablewrap { overflow-x: auto; max-width: 100%; }
p.count, .note { font-size: 12px; color: #5b6470; }
.error { background: #fdecec; border: 1px solid #f3b7b7; color: #8a1c1c; padding: 8px 12px; border-radius: 6px; white-space: pre-wrap; }
form.sql textarea { width: 100%; min-height: 110px; box-sizing: border-box; }
form.sql .row { display: flex; gap: 10px; align-items: center; margin: 6px 0; flex-wrap: wrap; }
.tag { display: inline-block; background: #e0e7ff; color: #3730a3; border-radius: 8px; padding: 0 6px; font-size: 12px; margin-right: 3px; }
figure.chart { margin: 10px 0; overflow-x: auto; }
a { color: #1d4ed8; }
</style>
</head>
<body data-page="{{.Title}}">
{{template "navbar" .}}
<main>
<h1>{{.Title}}</h1>
{{end}}

{{define "foot"}}</main>
</body>
</html>
{{end}}

{{define "logtable"}}<div class="tablewrap"><table class="log"><thead><tr><th class="num">depth</th><th>snapshot</th><th>parent</th><th>stage</th><th>message</th><th>changed</th><th>committed</th></tr></thead><tbody>
{{range .}}<tr><td class="num">{{.Depth}}</td><td><a href="/snapshot/{{.M.ID}}"><code title="{{.M.ID}}">{{short .M.ID}}</code></a>{{range .Tags}} <span class="tag">{{.}}</span>{{end}}</td>
<td>{{if .M.Parent}}<a href="/snapshot/{{.M.Parent}}"><code>{{short .M.Parent}}</code></a>{{else}}—{{end}}</td><td>{{.M.Stage}}</td><td>{{clip .M.Message 120}}</td><td>{{join .M.Changed ", "}}</td><td>{{.M.CommittedAt}}</td></tr>
{{end}}</tbody></table></div>{{end}}

{{define "home"}}{{template "head" .}}
<p>Lake <code>{{.Lake}}</code>. Read-only: nothing here writes to the lake.</p>
<h2>Refs</h2>
{{if .Refs}}<table class="refs"><thead><tr><th>kind</th><th>name</th><th>snapshot</th><th></th></tr></thead><tbody>
{{range .Refs}}<tr data-ref="{{.Name}}"><td>{{.Kind}}</td><td><strong>{{.Name}}</strong></td><td><a href="/snapshot/{{.ID}}"><code title="{{.ID}}">{{short .ID}}</code></a></td>
<td><a href="/log?at={{q .Name}}">log</a> · <a href="/tables?at={{q .Name}}">tables</a> · <a href="/sql?at={{q .Name}}">SQL</a></td></tr>
{{end}}</tbody></table>{{else}}<p class="note">No refs: the lake has no snapshot yet.</p>{{end}}
{{if .RunTags}}<details><summary>{{len .RunTags}} run-progress tag(s) (run/&lt;id&gt;/&lt;step&gt;)</summary><table><tbody>
{{range .RunTags}}<tr><td>{{index . 0}}</td><td><a href="/snapshot/{{index . 1}}"><code>{{short (index . 1)}}</code></a></td></tr>{{end}}
</tbody></table></details>{{end}}
<h2>Log of main (newest first)</h2>
{{template "logtable" .Log}}
<p><a href="/log">full log</a></p>
{{template "foot" .}}{{end}}

{{define "log"}}{{template "head" .}}
<p class="note">From {{if .At}}<code>{{.At}}</code>{{else}}main{{end}} back to the first snapshot (at most {{.Limit}}).</p>
{{template "logtable" .Log}}
{{template "foot" .}}{{end}}

{{define "snapshot"}}{{template "head" .}}
<table class="meta"><tbody>
<tr><th>id</th><td><code class="snapshot-id">{{.M.ID}}</code></td></tr>
<tr><th>parent</th><td>{{if .M.Parent}}<a href="/snapshot/{{.M.Parent}}"><code>{{.M.Parent}}</code></a>{{else}}— (a root){{end}}</td></tr>
<tr><th>stage</th><td>{{.M.Stage}}</td></tr>
<tr><th>message</th><td>{{.M.Message}}</td></tr>
<tr><th>seed</th><td>{{.M.Seed}}</td></tr>
<tr><th>inputs</th><td>{{range .M.Inputs}}<a href="/snapshot/{{.}}"><code>{{short .}}</code></a> {{else}}—{{end}}</td></tr>
<tr><th>changed</th><td>{{join .M.Changed ", "}}</td></tr>
<tr><th>code</th><td>{{.M.CodeVersion}}</td></tr>
<tr><th>committed</th><td>{{.M.CommittedAt}}</td></tr>
</tbody></table>
<h2>Parameters</h2><pre>{{.Params}}</pre>
<h2>Tables</h2>
<table><thead><tr><th>table</th><th class="num">rows</th><th class="num">files</th></tr></thead><tbody>
{{$at := .M.ID}}{{range .Tables}}{{$tf := index $.M.Tables .}}<tr><td><a href="/table/{{.}}?at={{$at}}">{{.}}</a></td><td class="num">{{$tf.Rows}}</td><td class="num">{{len $tf.Files}}</td></tr>
{{end}}</tbody></table>
<p><a href="/sql?at={{.M.ID}}">SQL at this snapshot</a> · <a href="/tables?at={{.M.ID}}">all tables</a></p>
<h2>Lineage</h2>
{{template "logtable" .Lineage}}
{{template "foot" .}}{{end}}

{{define "tables"}}{{template "head" .}}
<table class="tables"><thead><tr><th>table</th><th class="num">rows</th><th class="num">files</th><th>what it holds</th></tr></thead><tbody>
{{$at := .At}}{{range .Tables}}<tr><td><a href="/table/{{.Name}}?at={{$at}}">{{.Name}}</a></td><td class="num">{{if .Present}}{{.Rows}}{{else}}—{{end}}</td><td class="num">{{.Files}}</td><td>{{.Doc}}</td></tr>
{{end}}<tr><td><a href="/table/lake_snapshots?at={{$at}}">lake_snapshots</a></td><td></td><td></td><td>the lineage of this snapshot (a query-time table)</td></tr>
</tbody></table>
{{template "foot" .}}{{end}}

{{define "table"}}{{template "head" .}}
<p>{{.Doc}} · {{.Total}} row(s) · <a href="/sql?at={{q .At}}&amp;q={{q .SQL}}">open in SQL</a></p>
{{if .Columns}}<h2>Schema</h2><table class="schema"><thead><tr><th>column</th><th>type</th><th>nullable</th></tr></thead><tbody>
{{range .Columns}}<tr><td><code>{{.Name}}</code></td><td>{{.Type}}</td><td>{{.Nullable}}</td></tr>{{end}}
</tbody></table>{{end}}
<h2>First rows</h2>
{{.Result}}
{{template "foot" .}}{{end}}

{{define "sql"}}{{template "head" .}}
<form class="sql" method="get" action="/sql">
<input type="hidden" name="at" value="{{.At}}">
<textarea name="q" id="q" spellcheck="false" aria-label="SQL">{{.Q}}</textarea>
<div class="row">
<label>chart <select name="chart" id="chart"><option value="">none</option>{{$c := .Chart}}{{range .ChartTypes}}<option value="{{.}}"{{if eq . $c}} selected{{end}}>{{.}}</option>{{end}}</select></label>
<label>x <input name="x" id="x" value="{{.X}}" size="14"></label>
<label>y <input name="y" id="y" value="{{.Y}}" size="14"></label>
<label>series <input name="series" id="series" value="{{.Series}}" size="14"></label>
<button type="submit" id="run">Run</button>
</div>
<p class="note">Read-only SQL over the snapshot, confined as in <code>cualake query</code>: every table is a view, <code>lake_snapshots</code> holds the lineage.</p>
</form>
{{if .Error}}<div class="error" role="alert">{{.Error}}</div>{{end}}
{{if .ChartError}}<div class="error" role="alert">chart: {{.ChartError}}</div>{{end}}
{{if .Figure}}<figure class="chart" data-points="{{.Points}}">{{.Figure}}{{if .Note}}<figcaption class="note">{{.Note}}</figcaption>{{end}}</figure>{{end}}
{{if .Result}}<div class="result-box">{{.Result}}</div>{{end}}
{{template "foot" .}}{{end}}

{{define "notebooks"}}{{template "head" .}}
<ul class="notebooks">{{$at := .At}}{{range .Names}}<li><a href="/notebook/{{p .}}?at={{q $at}}">{{.}}</a></li>{{else}}<li>none</li>{{end}}</ul>
<p class="note">Each runs read-only against the snapshot when opened.</p>
{{template "foot" .}}{{end}}

{{define "error"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>cualake ui: {{.Code}}</title></head>
<body style="font: 14px system-ui, sans-serif; margin: 24px"><p><a href="/">cualake ui</a></p><div class="error" role="alert" style="background: #fdecec; border: 1px solid #f3b7b7; color: #8a1c1c; padding: 8px 12px; border-radius: 6px; white-space: pre-wrap">{{.Code}}: {{.Err}}</div></body></html>
{{end}}
`
