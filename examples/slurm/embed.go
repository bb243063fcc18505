// Package slurmexamples holds the sbatch script templates `cualake slurm
// submit` renders (Go text/template): shard.sbatch.tmpl (a job array, one
// task per shard), merge.sbatch.tmpl (the dependent merge) and
// stage.sbatch.tmpl (one job for unsharded stages). They are embedded in
// the binary; `--templates DIR` reads edited copies instead.
package slurmexamples

import "embed"

// FS holds the templates.
//
//go:embed *.sbatch.tmpl
var FS embed.FS
