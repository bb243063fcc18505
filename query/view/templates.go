package view

// The pages carry their own style and one small script and load nothing
// but their screenshots. The script records on <body data-rendered> how
// many steps, screenshots (loaded/total) and action markers the browser
// laid out, so a headless browser (and a reader's devtools) can check.
const pageTemplates = `
{{define "head"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="cualake view">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1d1d1f; margin: 0; background: #f6f7f9; }
header.page { background: #fff; border-bottom: 1px solid #dde1e6; padding: 14px 24px 10px; }
header.page h1 { font-size: 20px; margin: 0 0 6px; overflow-wrap: anywhere; }
main { padding: 0 24px 24px; }
.kicker { text-transform: uppercase; letter-spacing: .08em; font-size: 11px; color: #5b6470; margin: 0; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
dl.meta dt { color: #5b6470; } dl.meta dd { margin: 0; overflow-wrap: anywhere; }
code, pre, .tokens { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: #f0f2f5; padding: 8px 10px; border-radius: 6px; overflow: auto; max-height: 480px; white-space: pre-wrap; overflow-wrap: anywhere; margin: 6px 0; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #e5e7eb; color: #374151; }
.badge.success { background: #dcfce7; color: #166534; } .badge.failure { background: #fee2e2; color: #991b1b; }
.badge.error { background: #fde68a; color: #92400e; } .badge.incomplete { background: #e0e7ff; color: #3730a3; }
.badge.reported_infeasible { background: #f3e8ff; color: #6b21a8; }
section.card { background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 10px 14px; margin: 14px 0; }
section.card h2 { font-size: 15px; margin: 0 0 6px; }
.step { display: grid; grid-template-columns: minmax(320px, 1.3fr) minmax(280px, 1fr); gap: 14px; }
.screen { position: relative; width: 100%; background: #111827; border-radius: 6px; overflow: hidden; }
.screen img, .screen svg.wireframe { position: absolute; inset: 0; width: 100%; height: 100%; object-fit: contain; display: block; }
.screen svg.overlay { position: absolute; inset: 0; width: 100%; height: 100%; pointer-events: none; }
.screen-caption { position: absolute; left: 0; right: 0; bottom: 0; background: rgba(17, 24, 39, .78); color: #fff; font: 600 13px/1.4 ui-monospace, Menlo, Consolas, monospace; padding: 4px 8px; }
.screen-caption .typed { display: block; overflow-wrap: anywhere; }
.screen-note { font-size: 12px; color: #5b6470; margin: 4px 0; }
ol.actions { margin: 6px 0; padding-left: 22px; }
ol.actions li { margin: 2px 0; }
.caption { font-weight: 600; }
.raw { color: #5b6470; font-size: 12px; }
.action-error { color: #991b1b; font-size: 12px; }
details > summary { cursor: pointer; color: #374151; font-size: 13px; }
.tokens { white-space: pre-wrap; overflow-wrap: anywhere; background: #f8fafc; border: 1px solid #e5e7eb; border-radius: 6px; padding: 6px 8px; max-height: 420px; overflow: auto; }
.tok { border-right: 1px dotted #cbd5e1; color: #64748b; }
.tok.t { background: #dcfce7; color: #14532d; border-right-color: #86efac; }
.skip { color: #94a3b8; font-style: italic; }
.note { font-size: 12px; color: #5b6470; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border-bottom: 1px solid #e6e8eb; padding: 3px 9px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.side { overflow-x: auto; }
.side table { table-layout: fixed; }
.side td, .side th { min-width: 210px; max-width: 260px; }
.side .screen { margin-bottom: 3px; }
.evidence img { max-width: 260px; border: 1px solid #dde1e6; border-radius: 4px; margin: 4px; }
footer { padding: 12px 24px 24px; font-size: 12px; color: #5b6470; }
a { color: #1d4ed8; }
</style>
</head>
<body data-page="{{.Kind}}" data-snapshot="{{.Snapshot}}">
<header class="page"><p class="kicker">cualake {{.Kind}}{{if .Snapshot}} · snapshot <code class="snapshot-id" title="{{.Snapshot}}">{{short .Snapshot}}</code>{{end}}</p>
<h1>{{.Title}}</h1>{{if .Note}}<p class="note">{{.Note}}</p>{{end}}{{end}}

{{define "foot"}}<footer>Rendered by cualake from snapshot <code>{{.Snapshot}}</code>. Action coordinates are on the 1000×1000 grid of the action space, drawn onto the screen they were taken on.</footer>
<script>
window.addEventListener("load", function () {
  var imgs = document.querySelectorAll(".screen img"), loaded = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) loaded++; }
  document.body.setAttribute("data-rendered", "steps=" + document.querySelectorAll(".step, .cell-step").length +
    " screenshots=" + loaded + "/" + imgs.length + " wireframes=" + document.querySelectorAll(".screen svg.wireframe").length +
    " marks=" + document.querySelectorAll("svg.overlay .mark").length);
});
</script>
</body>
</html>
{{end}}

{{define "screen"}}<div class="screen" style="aspect-ratio: {{.W}} / {{.H}}">{{if .ImgSrc}}<img src="{{.ImgSrc}}" alt="screenshot before step {{.Step}}">{{else}}{{.Wireframe}}{{end}}{{.Overlay}}{{if .Typed}}<div class="screen-caption">{{range .Typed}}<span class="typed">⌨ {{.}}</span>{{end}}</div>{{end}}</div>{{end}}

{{define "trajectory"}}{{template "head" .}}{{with .Body}}
<p><span class="badge {{.T.Row.Outcome}}">{{.T.Row.Outcome}}</span> reward <strong>{{ffmt .T.Row.Reward}}</strong> · {{len .T.Turns}} step(s){{if .T.Row.Error}} · <span class="action-error">{{.T.Row.Error}}</span>{{end}}</p>
<dl class="meta">
<dt>task</dt><dd><a class="ref" data-kind="task" href="{{$.Link "task" .T.Row.TaskID}}">{{.T.Row.TaskID}}</a>{{with .T.Task}} · {{.Domain}}{{if .Split}} · {{.Split}}{{end}}{{end}}</dd>
{{with .T.Task}}<dt>instruction</dt><dd>{{.Instruction}}</dd>{{end}}
<dt>group</dt><dd><a class="ref" data-kind="group" href="{{$.Link "group" .T.Row.GroupID}}">{{.T.Row.GroupID}}</a></dd>
<dt>policy</dt><dd>{{.T.Row.Policy}} v{{.T.Row.PolicyVersion}} · iteration {{.T.Row.Iteration}} · seed {{.T.Row.Seed}} · source {{.T.Row.Source}}</dd>
{{if .T.Row.FinalState}}<dt>final state</dt><dd><code>{{.T.Row.FinalState}}</code></dd>{{end}}
</dl>
{{if .Judge}}<details class="judge" open><summary>Judge detail</summary><pre>{{.Judge}}</pre></details>{{end}}
</header>
<main>
{{range .Verifs}}<section class="card verification" data-strategy="{{.Strategy}}">
<h2>Verifier {{.Strategy}}: <span class="badge {{.Verdict}}">{{.Verdict}}</span></h2>
<p>executable outcome {{if .ExecutableOutcome}}<span class="badge {{.ExecutableOutcome}}">{{.ExecutableOutcome}}</span>{{else}}—{{end}} · reward {{ffmt .Reward}} · {{.Rounds}} round(s){{if .ProbeUsed}} · probe: {{.ProbeSteps}} step(s), {{.ProbeTokens}} tokens{{else}} · no probe{{end}}{{if .RefusedActions}} · {{.RefusedActions}} refused action(s){{end}}</p>
{{if .Criteria}}<table class="criteria"><thead><tr><th>criterion</th><th>status</th><th>evidence</th></tr></thead><tbody>
{{range .Criteria}}<tr><td>{{.Criterion}}</td><td><span class="badge">{{.Status}}</span></td><td>{{.Evidence}}</td></tr>
{{end}}</tbody></table>{{else if .CriteriaRaw}}<pre>{{.CriteriaRaw}}</pre>{{end}}
{{if .EvidenceImgs}}<div class="evidence">{{range .EvidenceImgs}}<img src="{{.}}" alt="probe evidence">{{end}}</div>{{end}}
</section>
{{end}}
{{if .TokenNote}}<p class="note token-note">{{.TokenNote}}</p>{{end}}
{{range .Steps}}<section class="card step-card" id="{{.Anchor}}"><h2><a href="#{{.Anchor}}">Step {{.Step}}</a></h2>
<div class="step" data-step="{{.Step}}">
<div>{{template "screen" .}}{{if .ScreenNote}}<p class="screen-note">{{.ScreenNote}}</p>{{end}}</div>
<div>
<ol class="actions">{{range .Actions}}<li><span class="caption" data-kind="{{.Kind}}">{{.Caption}}</span>{{if .Raw}}<div class="raw"><code>{{.Raw}}</code></div>{{end}}{{if .Error}}<div class="action-error">no-op: {{.Error}}</div>{{end}}</li>{{end}}</ol>
{{if .Response}}<details class="response" open><summary>Response</summary><pre>{{.Response}}</pre></details>{{end}}
{{if .Tree}}<details class="a11y"><summary>Accessibility tree</summary><pre>{{.Tree}}</pre></details>{{else if .TreeNote}}<p class="note">{{.TreeNote}}</p>{{end}}
{{if .Tokens}}<details class="seg-tokens"><summary>Tokens: {{.TokenLabel}}</summary>{{if .TokenNote}}<p class="note">{{.TokenNote}}</p>{{end}}{{.Tokens}}</details>{{end}}
</div></div></section>
{{end}}
</main>
{{end}}{{template "foot" .}}{{end}}

{{define "group"}}{{template "head" .}}{{with .Body}}
<p>{{len .G.Rollouts}} rollout(s), {{.Success}} successful</p>
<dl class="meta">
{{with .G.Task}}<dt>task</dt><dd><a class="ref" data-kind="task" href="{{$.Link "task" .TaskID}}">{{.TaskID}}</a> · {{.Domain}}</dd><dt>instruction</dt><dd>{{.Instruction}}</dd>{{end}}
</dl>
</header>
<main>
<section class="card side"><table class="rollouts">
<thead><tr><th></th>{{range .Rollouts}}<th><a class="ref" data-kind="trajectory" href="{{$.Link "trajectory" .R.Row.TrajectoryID}}">{{.R.Row.TrajectoryID}}</a></th>{{end}}</tr></thead>
<tbody>
<tr><th>outcome</th>{{range .Rollouts}}<td class="outcome"><span class="badge {{.R.Row.Outcome}}">{{.R.Row.Outcome}}</span></td>{{end}}</tr>
<tr><th>reward</th>{{range .Rollouts}}<td class="num reward">{{ffmt .R.Row.Reward}}</td>{{end}}</tr>
<tr><th>advantage</th>{{range .Rollouts}}<td class="num advantage">{{advs .R.Advantages}}</td>{{end}}</tr>
<tr><th>steps</th>{{range .Rollouts}}<td class="num">{{len .R.Turns}}</td>{{end}}</tr>
<tr><th>policy</th>{{range .Rollouts}}<td>{{.R.Row.Policy}} v{{.R.Row.PolicyVersion}}</td>{{end}}</tr>
<tr><th>error</th>{{range .Rollouts}}<td class="action-error">{{.R.Row.Error}}</td>{{end}}</tr>
{{range $i, $row := .Rows}}<tr><th>step {{$i}}</th>{{range $row}}<td>{{if .}}<div class="cell-step">{{template "screen" .}}{{range .Actions}}<div class="caption" data-kind="{{.Kind}}">{{.Caption}}</div>{{if .Error}}<div class="action-error">no-op: {{.Error}}</div>{{end}}{{end}}</div>{{end}}</td>{{end}}</tr>
{{end}}</tbody></table>
<p class="note">Advantage: the segments' advantage (GRPO: (R − mean R)/(std R + 1e-6) over the group; STEPO: A/|T| per step item); — when the snapshot holds no segment of the rollout.</p>
</section>
</main>
{{end}}{{template "foot" .}}{{end}}

{{define "task"}}{{template "head" .}}{{with .Body}}
<dl class="meta">
<dt>domain</dt><dd>{{.T.Row.Domain}}{{if .T.Row.App}} · app {{.T.Row.App}}{{end}}</dd>
<dt>instruction</dt><dd class="instruction">{{.T.Row.Instruction}}</dd>
<dt>source</dt><dd>{{.T.Row.Source}}{{if .T.Row.Origin}} · from {{.T.Row.Origin}}{{end}}{{if .T.Row.ParentTaskIDs}} · parents {{range .T.Row.ParentTaskIDs}}<a class="ref" data-kind="task" href="{{$.Link "task" .}}">{{.}}</a> {{end}}{{end}}</dd>
<dt>split</dt><dd>{{if .T.Row.Split}}{{.T.Row.Split}}{{else}}(not split){{end}} · feasible {{.T.Row.Feasible}} · difficulty {{.T.Row.Difficulty}}{{if .T.Row.Abilities}} · abilities {{join .T.Row.Abilities ", "}}{{end}}</dd>
</dl>
</header>
<main>
<section class="card"><h2>Setup</h2><pre>{{.Setup}}</pre><h2>Judge</h2><pre>{{.Judge}}</pre></section>
<section class="card pass-rates"><h2>Pass-rate history</h2>
{{if .T.PassRates}}{{.Chart}}
<table><thead><tr><th>iteration</th><th>rollouts</th><th>successes</th><th>observed</th><th>EMA</th><th>weight</th><th>in pool</th></tr></thead><tbody>
{{range .T.PassRates}}<tr><td class="num">{{.Iteration}}</td><td class="num">{{.Rollouts}}</td><td class="num">{{.Successes}}</td><td class="num">{{optf .Observed}}</td><td class="num">{{optf .EMA}}</td><td class="num">{{optf .Weight}}</td><td>{{.InPool}}</td></tr>
{{end}}</tbody></table>{{else}}<p class="note">No pass-rate rows for this task in this snapshot.</p>{{end}}
</section>
<section class="card"><h2>Trajectories ({{.T.Total}})</h2>
{{if lt .Shown .T.Total}}<p class="note">The newest {{.Shown}} of {{.T.Total}} are listed.</p>{{end}}
<table class="trajectories"><thead><tr><th>trajectory</th><th>group</th><th>iteration</th><th>source</th><th>policy</th><th>outcome</th><th>reward</th><th>steps</th></tr></thead><tbody>
{{range .T.Trajectories}}<tr><td><a class="ref" data-kind="trajectory" href="{{$.Link "trajectory" .TrajectoryID}}">{{.TrajectoryID}}</a></td><td><a class="ref" data-kind="group" href="{{$.Link "group" .GroupID}}">{{.GroupID}}</a></td><td class="num">{{.Iteration}}</td><td>{{.Source}}</td><td>{{.Policy}} v{{.PolicyVersion}}</td><td><span class="badge {{.Outcome}}">{{.Outcome}}</span></td><td class="num">{{ffmt .Reward}}</td><td class="num">{{.Steps}}</td></tr>
{{end}}</tbody></table>
</section>
</main>
{{end}}{{template "foot" .}}{{end}}
`
