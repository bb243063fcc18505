package experiment

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook"
)

// curve is one chart of the report: a column of the experiments table.
type curve struct {
	column, title, ylabel string
	from                  int // first iteration drawn (train seconds skip the warm start's SFT)
}

var curves = []curve{
	{"heldout_success", "Held-out success per iteration", "held-out success", 0},
	{"train_success", "Training success per iteration", "training success", 0},
	{"mean_reward", "Mean training reward per iteration", "mean reward", 0},
	{"zero_variance_share", "Zero-variance groups per iteration", "share of groups", 1},
	{"train_seconds", "Train seconds per iteration", "seconds", 1},
	{"rollout_seconds", "Rollout seconds per iteration", "seconds", 1},
}

// scope returns the WHERE condition selecting experiment name's rows and
// the SQL expression ranking its variants as order lists them (nil: by
// name). Names are checked safe, so they go into SQL literals as is.
func scope(name string, order []string) (where, rank string, err error) {
	if err := checkName("experiment", name); err != nil {
		return "", "", err
	}
	for _, v := range order {
		if err := checkName("variant", v); err != nil {
			return "", "", err
		}
	}
	where = fmt.Sprintf("experiment = '%s'", name)
	rank = "variant"
	if len(order) > 0 {
		var b strings.Builder
		b.WriteString("CASE variant")
		for i, v := range order {
			fmt.Fprintf(&b, " WHEN '%s' THEN %d", v, i)
		}
		fmt.Fprintf(&b, " ELSE %d END", len(order))
		rank = b.String()
	}
	return where, rank, nil
}

// FinalSQL returns the query of an experiment's final numbers, one row per
// variant that has rows, numbered 1, 2, ... (position) in order: at each branch's last iteration, the mean and sample
// sd over seeds of held-out and training success, mean reward, train and
// rollout seconds summed over the RL iterations (the prefix excluded),
// tokens, train_time_ratio (a variant's mean train seconds over the first
// variant's) and the prefix's executable rate; and heldout_gain, the mean
// and sd over seeds of each branch's last held-out success minus its own
// iteration 0's (the warm start of that seed), since a gain is compared
// per seed: the seeds' warm starts spread more than their gains. The report formats it;
// `experiment report --json` prints it.
func FinalSQL(name string, order []string) (string, error) {
	where, rank, err := scope(name, order)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("WITH last AS (SELECT variant, seed, max(iteration) AS it FROM experiments WHERE %[1]s GROUP BY ALL),\n"+
		"fin AS (SELECT e.* FROM experiments e JOIN last l ON e.variant = l.variant AND e.seed = l.seed AND e.iteration = l.it WHERE e.%[1]s),\n"+
		"tot AS (SELECT variant, seed, sum(train_seconds) AS train_s, sum(rollout_seconds) AS rollout_s, sum(tokens) AS tokens\n"+
		"        FROM experiments WHERE %[1]s AND iteration >= 1 GROUP BY ALL),\n"+
		"pre AS (SELECT variant, seed, executable_rate, heldout_success FROM experiments WHERE %[1]s AND iteration = 0),\n"+
		"per AS (SELECT f.variant, f.seed, f.heldout_success, f.heldout_success - p.heldout_success AS heldout_gain, f.train_success, f.mean_reward,\n"+
		"        t.train_s, t.rollout_s, t.tokens, p.executable_rate\n"+
		"        FROM fin f LEFT JOIN tot t ON t.variant = f.variant AND t.seed = f.seed LEFT JOIN pre p ON p.variant = f.variant AND p.seed = f.seed),\n"+
		"agg AS (SELECT variant, %[2]s AS rank, count(*) AS seeds,\n"+
		"        avg(heldout_success) AS heldout_success, coalesce(stddev_samp(heldout_success), 0) AS heldout_success_sd,\n"+
		"        avg(heldout_gain) AS heldout_gain, CASE WHEN count(heldout_gain) > 0 THEN coalesce(stddev_samp(heldout_gain), 0) END AS heldout_gain_sd,\n"+
		"        avg(train_success) AS train_success, coalesce(stddev_samp(train_success), 0) AS train_success_sd,\n"+
		"        avg(mean_reward) AS mean_reward, coalesce(stddev_samp(mean_reward), 0) AS mean_reward_sd,\n"+
		"        avg(train_s) AS train_seconds, coalesce(stddev_samp(train_s), 0) AS train_seconds_sd,\n"+
		"        avg(rollout_s) AS rollout_seconds, coalesce(stddev_samp(rollout_s), 0) AS rollout_seconds_sd, avg(tokens) AS tokens,\n"+
		"        avg(executable_rate) AS executable_rate, CASE WHEN count(executable_rate) > 0 THEN coalesce(stddev_samp(executable_rate), 0) END AS executable_rate_sd\n"+
		"        FROM per GROUP BY variant)\n"+
		"SELECT row_number() OVER (ORDER BY rank, variant) AS position, variant, seeds, heldout_success, heldout_success_sd, heldout_gain, heldout_gain_sd, train_success, train_success_sd, mean_reward, mean_reward_sd,\n"+
		"       train_seconds, train_seconds_sd, rollout_seconds, rollout_seconds_sd, CAST(round(tokens) AS BIGINT) AS tokens,\n"+
		"       round(train_seconds / nullif(first_value(train_seconds) OVER (ORDER BY rank, variant), 0), 2) AS train_time_ratio,\n"+
		"       executable_rate, executable_rate_sd\n"+
		"FROM agg ORDER BY rank, variant", where, rank), nil
}

// Notebook returns the report of experiment name as a notebook over the
// experiments table: a summary, the final numbers per variant (mean +- sd
// over the seeds), and a curve per metric with the spread over seeds.
// Variants are ordered as order lists them (nil: by name); doc heads it.
func Notebook(name, doc string, order []string) (string, error) {
	where, rank, err := scope(name, order)
	if err != nil {
		return "", err
	}
	final, err := FinalSQL(name, order)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Experiment %s\n\n", name)
	if doc != "" {
		b.WriteString(strings.TrimSpace(doc) + "\n\n")
	}
	b.WriteString("Every number below is one SQL query over the `experiments` table of the snapshot named at the top " +
		"(open a chart's SQL to re-run it with `cualake query --at SNAPSHOT`). Each variant ran on its own branch " +
		"`exp/" + name + "/<variant>/s<seed>`, forked from its seed's shared prefix (pool, synthesis, warm start, initial pass); " +
		"iteration 0 is that prefix. Spread is the sample standard deviation over the seeds (0 with one seed). " +
		"Seconds come from the commit times of each step's snapshot (1 s resolution) and depend on the machine and its load.\n\n")
	fmt.Fprintf(&b, "```sql\n-- title: Summary\n-- display: summary\nSELECT count(DISTINCT variant) AS variants, count(DISTINCT seed) AS seeds,\n"+
		"       max(iteration) AS iterations, count(DISTINCT branch) AS branches\nFROM experiments WHERE %s\n```\n\n", where)
	b.WriteString("## Final numbers\n\nAt each branch's last iteration; train and rollout seconds are summed over the RL iterations " +
		"(the prefix excluded); `heldout_gain` is each seed's last held-out success minus its own iteration 0's (its warm start), " +
		"averaged over the seeds; `train_time_ratio` divides a variant's mean train seconds by the first variant's; " +
		"`executable_rate` is the prefix's synthesis (executable candidate-rounds over candidate-rounds, duplicates aside). " +
		"The numbers unformatted: `cualake experiment report " + name + " --json`.\n\n")
	fmt.Fprintf(&b, "```sql\n-- title: Final numbers per variant (mean ± sd over seeds)\n"+
		"WITH final AS (\n%s)\n"+
		"SELECT variant, seeds,\n"+
		"       printf('%%.3f ± %%.3f', heldout_success, heldout_success_sd) AS heldout_success,\n"+
		"       CASE WHEN heldout_gain IS NULL THEN NULL ELSE printf('%%+.3f ± %%.3f', heldout_gain, heldout_gain_sd) END AS heldout_gain,\n"+
		"       printf('%%.3f ± %%.3f', train_success, train_success_sd) AS train_success,\n"+
		"       printf('%%.3f ± %%.3f', mean_reward, mean_reward_sd) AS mean_reward,\n"+
		"       printf('%%.0f ± %%.0f', train_seconds, train_seconds_sd) AS train_seconds,\n"+
		"       printf('%%.0f ± %%.0f', rollout_seconds, rollout_seconds_sd) AS rollout_seconds, tokens, train_time_ratio,\n"+
		"       CASE WHEN executable_rate IS NULL THEN NULL ELSE printf('%%.3f ± %%.3f', executable_rate, executable_rate_sd) END AS executable_rate\n"+
		"FROM final ORDER BY position\n```\n\n", final)
	b.WriteString("## Curves\n\nOne line per variant for the mean over seeds, and two for mean ± sd.\n\n")
	for _, c := range curves {
		fmt.Fprintf(&b, "```sql\n-- title: %s\n-- chart: line x=iteration y=mean,minus_sd,plus_sd series=variant ylabel=\"%s\" yscale=linear\n"+
			"SELECT iteration, variant, avg(%[3]s) AS mean,\n"+
			"       avg(%[3]s) - coalesce(stddev_samp(%[3]s), 0) AS minus_sd,\n"+
			"       avg(%[3]s) + coalesce(stddev_samp(%[3]s), 0) AS plus_sd, count(%[3]s) AS seeds\n"+
			"FROM experiments WHERE %[4]s AND iteration >= %[5]d\nGROUP BY iteration, variant ORDER BY iteration, %[6]s, variant\n```\n\n",
			c.title, c.ylabel, c.column, where, c.from, rank)
	}
	b.WriteString("## Rows\n\nEvery row of the experiment, as stored.\n\n")
	fmt.Fprintf(&b, "```sql\n-- title: The experiment's rows\n-- rows: 200\nSELECT * FROM experiments WHERE %s ORDER BY %s, variant, seed, iteration\n```\n", where, rank)
	return b.String(), nil
}

// Final runs FinalSQL on the experiments table of snapshot m: one map per
// variant, column name to value (NULL as nil), in order.
func Final(ctx context.Context, l *lake.Lake, m *lake.Manifest, name string, order []string) ([]map[string]any, error) {
	sql, err := FinalSQL(name, order)
	if err != nil {
		return nil, err
	}
	res, err := query.QueryAt(ctx, l, m, sql)
	if err != nil {
		return nil, fmt.Errorf("experiment %s: final numbers: %w", name, err)
	}
	out := make([]map[string]any, 0, len(res.Rows))
	for _, r := range res.Rows {
		row := make(map[string]any, len(res.Columns))
		for i, c := range res.Columns {
			row[c] = r[i]
		}
		out = append(out, row)
	}
	return out, nil
}

// Report writes the HTML report of experiment name from the experiments
// table of snapshot m (nil: the head of l's branch). It is an error when
// that table has no rows of the experiment, or a cell fails.
func Report(ctx context.Context, l *lake.Lake, m *lake.Manifest, name, doc string, order []string, w io.Writer) error {
	src, err := Notebook(name, doc, order)
	if err != nil {
		return err
	}
	if m == nil {
		if m, err = l.At(ctx, ""); err != nil {
			return err
		}
	}
	e, err := query.Open(ctx, l, m)
	if err != nil {
		return err
	}
	defer e.Close()
	res, err := e.Query(ctx, "SELECT count(*) FROM experiments WHERE experiment = ?", name)
	if err != nil {
		return err
	}
	if n, _ := toInt(res.Rows[0][0]); n == 0 {
		return fmt.Errorf("experiment %s: no rows in the experiments table on branch %s (run `cualake experiment run` first)", name, l.Branch())
	}
	rep, err := notebook.Run(ctx, e, notebook.Parse("experiment-"+name+".md", []byte(src)))
	if err != nil {
		return err
	}
	if err := rep.Err(); err != nil {
		return err
	}
	return notebook.WriteHTML(w, rep)
}
