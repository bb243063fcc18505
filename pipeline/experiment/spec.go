// Package experiment runs ablations on lake branches: a base loop config,
// variants as overrides of its keys, and seeds. Per seed, the plan's shared
// prefix (pool, synthesis, warm start, initial pass) is committed once on a
// prefix branch; every variant x seed forks its own branch
// exp/<experiment>/<variant>/s<seed> from it and runs the RL iterations
// there. The per-iteration numbers of every branch land in the experiments
// table, which the report charts.
package experiment

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/cualake/cualake/pipeline/infile"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
)

// Spec is an experiment file (examples/experiments/*.yaml).
type Spec struct {
	Name string `yaml:"name"`
	// Doc says what the experiment re-derives; it heads the report.
	Doc string `yaml:"doc"`
	// Base is the loop config (examples/pipeline.yaml form), relative to
	// the experiment file; "" is the loop's defaults.
	Base string `yaml:"base"`
	// Set overrides keys of the base for every variant (to scale it down).
	Set map[string]any `yaml:"set"`
	// Seeds replace the config's seed; each seed has its own prefix.
	Seeds    []int64   `yaml:"seeds"`
	Variants []Variant `yaml:"variants"`

	dir string // folder of the file, for Base
}

// Variant is one arm: overrides of dotted config keys (segment.mode,
// sample.sampler, ...) applied after the spec's Set.
type Variant struct {
	Name string         `yaml:"name"`
	Set  map[string]any `yaml:"set"`
}

// Arm is one variant at one seed, resolved: its config and branches.
type Arm struct {
	Variant   string
	Seed      int64
	Overrides map[string]any // the spec's Set and the variant's, merged
	Config    loop.Config
	Branch    string // exp/<experiment>/<variant>/s<seed>
	Prefix    *Prefix
	// Leader is an earlier arm (DispatchOrder) of the same prefix whose
	// leading steps are most of this arm's work: Run starts this arm when
	// the leader has finished, and it takes those steps from it
	// (adoptArmSteps). Nil: it starts as soon as its prefix is done.
	Leader *Arm
	// sharers are the earlier arms of the same prefix that share at least
	// one leading step with this one: it records its steps after them
	// (recordAfter).
	sharers []*Arm
}

// Prefix is a shared prefix: the plan's steps up to the initial pass, for
// one seed, shared by every variant whose overrides leave them unchanged.
type Prefix struct {
	Branch string      // exp/<experiment>/_prefix/p<hash>/s<seed>
	RunID  string      // hash of its steps (the resume tags' run id)
	Steps  []loop.Step // the plan's first steps
	Seed   int64
	Arms   []*Arm // none for a stem
	// Parent is the stem this prefix (or stem) forks from: the leading
	// steps it shares with another prefix of its seed, computed once
	// (nil: it shares none).
	Parent *Prefix

	steps0 []loop.Step // Steps at seed 0, whose hash names the branch
}

// Plan is a resolved experiment: every arm and the prefixes they share.
type Plan struct {
	Spec     Spec
	Arms     []*Arm
	Prefixes []*Prefix
	// Stems are the leading steps that prefixes of one seed share (the
	// warm start of variants that differ from the initial pass on, say),
	// each run once on its own branch, from which those prefixes fork.
	Stems []*Prefix
}

// prefixDir is the part of a prefix branch's name between the experiment
// and p<hash>/s<seed>; the tail after it names the steps and seed alone,
// so equal prefixes of two experiments have equal tails.
const prefixDir = "/_prefix/"

// maxName bounds experiment and variant names so that every branch and
// resume tag stays within the lake's 128-byte ref names.
const maxName = 32

var safeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// checkName refuses a name that is not one safe branch path component.
func checkName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s name is empty", kind)
	case len(name) > maxName:
		return fmt.Errorf("%s %q: longer than %d bytes", kind, name, maxName)
	case !safeName.MatchString(name) || strings.Contains(name, ".."):
		return fmt.Errorf("%s %q: not a safe branch name (lowercase letters, digits, '.', '_', '-'; starting with a letter or digit)", kind, name)
	}
	return nil
}

// Load reads an experiment file strictly (unknown keys are errors) and
// resolves it (Resolve): every error comes before anything runs.
func Load(path string) (*Plan, error) {
	// Read whole, so bounded: /dev/zero would never end.
	b, err := infile.Read(path, infile.MaxText)
	switch {
	case errors.Is(err, infile.ErrNotRegular) || errors.Is(err, infile.ErrTooLarge):
		return nil, fmt.Errorf("experiment %w", err) // the message names the file
	case err != nil:
		return nil, fmt.Errorf("experiment %s: %w", path, err)
	}
	var s Spec
	if err := loop.DecodeYAML(b, &s, true); err != nil {
		return nil, fmt.Errorf("experiment %s: %w", path, err)
	}
	s.dir = filepath.Dir(path)
	p, err := Resolve(s)
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %w", path, err)
	}
	return p, nil
}

// OnlySeeds is p restricted to the given seeds, each of which the file
// must list: a long experiment can run seed by seed (in several jobs or
// sessions), and each run replaces only its seeds' rows.
func (p *Plan) OnlySeeds(seeds []int64) (*Plan, error) {
	want := map[int64]bool{}
	for _, sd := range seeds {
		if !slices.Contains(p.Spec.Seeds, sd) {
			return nil, fmt.Errorf("experiment %s: seed %d is not one of the file's seeds %v", p.Spec.Name, sd, p.Spec.Seeds)
		}
		want[sd] = true
	}
	q := &Plan{Spec: p.Spec}
	q.Spec.Seeds = nil
	for _, sd := range p.Spec.Seeds {
		if want[sd] {
			q.Spec.Seeds = append(q.Spec.Seeds, sd)
		}
	}
	for _, pre := range p.Prefixes {
		if want[pre.Seed] {
			q.Prefixes = append(q.Prefixes, pre)
		}
	}
	for _, st := range p.Stems {
		if want[st.Seed] {
			q.Stems = append(q.Stems, st)
		}
	}
	for _, a := range p.Arms {
		if want[a.Seed] {
			q.Arms = append(q.Arms, a)
		}
	}
	return q, nil
}

// Resolve checks a spec and builds every arm's config: names are safe and
// unique, every override names a key of the config, every config
// validates, and arms whose prefix steps are equal share one prefix.
func Resolve(s Spec) (*Plan, error) {
	if err := checkName("experiment", s.Name); err != nil {
		return nil, err
	}
	if len(s.Variants) == 0 {
		return nil, fmt.Errorf("experiment %s: no variants", s.Name)
	}
	if len(s.Seeds) == 0 {
		return nil, fmt.Errorf("experiment %s: no seeds (seeds: [1, 2, 3])", s.Name)
	}
	seen := map[int64]bool{}
	for _, sd := range s.Seeds {
		if sd < 0 || seen[sd] {
			return nil, fmt.Errorf("experiment %s: seed %d is negative or listed twice", s.Name, sd)
		}
		seen[sd] = true
	}
	base := loop.Default()
	if s.Base != "" {
		path := s.Base
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.dir, path)
		}
		var err error
		if base, err = loop.Load(path); err != nil {
			return nil, fmt.Errorf("experiment %s: base config: %w", s.Name, err)
		}
	}
	p := &Plan{Spec: s}
	names := map[string]bool{}
	prefixes := map[string]*Prefix{}
	for i, v := range s.Variants {
		if err := checkName("variant", v.Name); err != nil {
			return nil, fmt.Errorf("experiment %s: variant %d: %w", s.Name, i+1, err)
		}
		if names[v.Name] {
			return nil, fmt.Errorf("experiment %s: variant %q is listed twice", s.Name, v.Name)
		}
		names[v.Name] = true
		over := map[string]any{}
		for k, x := range s.Set {
			over[k] = x
		}
		for k, x := range v.Set {
			over[k] = x
		}
		cfg, err := Apply(base, over)
		if err != nil {
			where := "variant " + v.Name
			if k := firstKey(err); k != "" && !setsKey(v.Set, k) {
				where = "set"
			}
			return nil, fmt.Errorf("experiment %s: %s: %w", s.Name, where, err)
		}
		for _, sd := range s.Seeds {
			c := cfg
			c.Seed = sd
			a := &Arm{Variant: v.Name, Seed: sd, Overrides: over, Config: c,
				Branch: fmt.Sprintf("exp/%s/%s/s%d", s.Name, v.Name, sd)}
			if err := lake.ValidateRefName(a.Branch); err != nil {
				return nil, fmt.Errorf("experiment %s: variant %s: %w", s.Name, v.Name, err)
			}
			steps, err := prefixSteps(c)
			if err != nil {
				return nil, fmt.Errorf("experiment %s: variant %s: %w", s.Name, v.Name, err)
			}
			id := stepsID(steps)
			pre := prefixes[id]
			if pre == nil {
				// The group hash leaves the seed out, so one prefix name
				// covers a group of variants at every seed.
				c0 := c
				c0.Seed = 0
				s0, _ := prefixSteps(c0)
				pre = &Prefix{Branch: prefixBranch(s.Name, s0, sd), RunID: id, Steps: steps, Seed: sd, steps0: s0}
				prefixes[id] = pre
				p.Prefixes = append(p.Prefixes, pre)
			}
			a.Prefix = pre
			pre.Arms = append(pre.Arms, a)
			p.Arms = append(p.Arms, a)
		}
	}
	p.Stems = stems(s.Name, p.Prefixes)
	setLeaders(DispatchOrder(p))
	return p, nil
}

// leaderShare is the part of an arm's expected time (its steps' Weight)
// that the leading steps it shares with an earlier arm must reach for it
// to wait for that arm. Waiting trades wall time (the arm starts later)
// for CPU (the shared steps run once); below this, a few cheap shared
// steps (a segment step, say) would hold the arm back for little.
const leaderShare = 1.0 / 3

// setLeaders sets every arm's sharers (the arms before it in order that
// fork from the same prefix and share leading steps with it) and Leader:
// the sharer it shares the most leading steps with (the first of equals),
// where those steps weigh at least leaderShare of its own.
func setLeaders(order []*Arm) {
	for i, a := range order {
		steps := suffixSteps(a.Config)
		total := weight(steps)
		best := 0
		for _, b := range order[:i] {
			if b.Prefix != a.Prefix {
				continue
			}
			n := sharedSteps(steps, suffixSteps(b.Config))
			if n > 0 {
				a.sharers = append(a.sharers, b)
			}
			if n > best && weight(steps[:n]) >= leaderShare*total {
				a.Leader, best = b, n
			}
		}
	}
}

// weight is the steps' expected seconds (only ratios matter).
func weight(steps []loop.Step) float64 {
	w := 0.0
	for _, s := range steps {
		w += s.Weight
	}
	return w
}

// prefixBranch names the branch of a prefix or stem: the hash of its
// steps at seed 0 leaves the seed out, so one name covers a group of
// variants at every seed, and equal steps in two experiments have equal
// tails (adoptPrefix).
func prefixBranch(experiment string, steps0 []loop.Step, seed int64) string {
	return fmt.Sprintf("exp/%s%sp%s/s%d", experiment, prefixDir, stepsID(steps0)[:8], seed)
}

// sharedSteps is how many leading steps a and b have in common (same key,
// command and flags).
func sharedSteps(a, b []loop.Step) int {
	n := 0
	for n < len(a) && n < len(b) && a[n].Key == b[n].Key && slices.Equal(a[n].Command, b[n].Command) && slices.Equal(a[n].Flags, b[n].Flags) {
		n++
	}
	return n
}

// stems builds the stems of prefixes and sets every prefix's and stem's
// Parent. Per seed, the prefixes' leading steps form a tree: wherever two
// prefixes part after d >= 1 shared steps, those d steps are a stem (a
// branch point of the tree), and each prefix or stem forks from its
// deepest proper stem. So variants that differ only from the initial pass
// on train the warm start once, not once per group of variants.
func stems(experiment string, prefixes []*Prefix) []*Prefix {
	var out []*Prefix
	bySeed := map[int64][]*Prefix{}
	var seeds []int64
	for _, pre := range prefixes {
		if bySeed[pre.Seed] == nil {
			seeds = append(seeds, pre.Seed)
		}
		bySeed[pre.Seed] = append(bySeed[pre.Seed], pre)
	}
	for _, sd := range seeds {
		group := bySeed[sd]
		made := map[string]*Prefix{}
		var seedStems []*Prefix
		for i, a := range group {
			for _, b := range group[i+1:] {
				d := sharedSteps(a.Steps, b.Steps)
				if d == 0 {
					continue
				}
				steps := a.Steps[:d:d]
				id := stepsID(steps)
				if made[id] != nil {
					continue
				}
				st := &Prefix{Branch: prefixBranch(experiment, a.steps0[:d:d], sd), RunID: id, Steps: steps, Seed: sd, steps0: a.steps0[:d:d]}
				made[id] = st
				seedStems = append(seedStems, st)
			}
		}
		// Shallow stems first: a parent always precedes its children.
		sort.SliceStable(seedStems, func(i, j int) bool { return len(seedStems[i].Steps) < len(seedStems[j].Steps) })
		for _, n := range append(append([]*Prefix{}, seedStems...), group...) {
			for _, st := range seedStems {
				if len(st.Steps) < len(n.Steps) && sharedSteps(st.Steps, n.Steps) == len(st.Steps) {
					n.Parent = st // the deepest so far; later stems are deeper
				}
			}
		}
		out = append(out, seedStems...)
	}
	return out
}

// keyError names the override key an error is about.
type keyError struct {
	key string
	err error
}

func (e *keyError) Error() string { return e.key + ": " + e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// setsKey reports whether set names key or a section holding it (an
// error about segment.k may come from set: {segment: {k: ...}}).
func setsKey(set map[string]any, key string) bool {
	for {
		if _, ok := set[key]; ok {
			return true
		}
		i := strings.LastIndex(key, ".")
		if i < 0 {
			return false
		}
		key = key[:i]
	}
}

func firstKey(err error) string {
	var k *keyError
	if errors.As(err, &k) {
		return k.key
	}
	return ""
}

// Apply returns base with the dotted keys of over set (segment.k: 3). A
// key the config does not have is an error naming it, as is a value of
// the wrong type; the result must validate.
func Apply(base loop.Config, over map[string]any) (loop.Config, error) {
	b, err := yaml.Marshal(base)
	if err != nil {
		return base, err
	}
	var tree map[string]any
	if err := yaml.Unmarshal(b, &tree); err != nil {
		return base, err
	}
	keys := make([]string, 0, len(over))
	for k := range over {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 && strings.HasPrefix(k, keys[i-1]+".") {
			return base, &keyError{k, fmt.Errorf("also set as part of %s", keys[i-1])}
		}
		if err := setKey(tree, k, over[k]); err != nil {
			return base, &keyError{k, err}
		}
		if err := checkValue(k, over[k]); err != nil {
			return base, err
		}
	}
	if b, err = yaml.Marshal(tree); err != nil {
		return base, err
	}
	c := loop.Default()
	if err := loop.DecodeYAML(b, &c, false); err != nil {
		return base, fmt.Errorf("overrides %s: %w", strings.Join(keys, ", "), err)
	}
	if err := c.Validate(); err != nil {
		return base, fmt.Errorf("overrides %s: %w", strings.Join(keys, ", "), err)
	}
	return c, nil
}

// checkValue decodes one override on its own, so that a value of the
// wrong type is reported by its key: the merged config's YAML, where it
// would otherwise fail, has line numbers that are in no file. A section's
// keys are checked one by one.
func checkValue(key string, v any) error {
	t, err := fieldType(key)
	if err != nil {
		return &keyError{key, err}
	}
	if m, ok := v.(map[string]any); ok && t.Kind() == reflect.Struct {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := checkValue(key+"."+k, m[k]); err != nil {
				return err
			}
		}
		return nil
	}
	doc := v
	parts := strings.Split(key, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		doc = map[string]any{parts[i]: doc}
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return &keyError{key, err}
	}
	c := loop.Default()
	if err := loop.DecodeYAML(b, &c, false); err != nil {
		return &keyError{key, fmt.Errorf("want %s, got %s", typeWord(t), valueWord(v))}
	}
	return nil
}

// fieldType is the type of the config field a dotted key names, by the
// fields' yaml names.
func fieldType(key string) (reflect.Type, error) {
	t := reflect.TypeOf(loop.Config{})
	parts := strings.Split(key, ".")
	for i, part := range parts {
		if t.Kind() != reflect.Struct {
			return nil, fmt.Errorf("unknown config key (%s is not a section)", strings.Join(parts[:i], "."))
		}
		found := false
		for j := 0; j < t.NumField(); j++ {
			f := t.Field(j)
			if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); f.IsExported() && name == part {
				t, found = f.Type, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown config key (no %q in %s)", part, orTop(strings.Join(parts[:i], ".")))
		}
	}
	return t, nil
}

// typeWord says what a config field of type t takes, in YAML's words.
func typeWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "a list of strings"
		}
		return "a list"
	case reflect.Struct:
		return "a section of keys"
	}
	return t.String()
}

// valueWord writes an override's value as the file would: strings quoted,
// lists and sections in flow style.
func valueWord(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	b, err := yaml.MarshalWithOptions(v, yaml.Flow(true))
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(string(b))
}

func setKey(tree map[string]any, key string, v any) error {
	parts := strings.Split(key, ".")
	m := tree
	for i, part := range parts {
		cur, ok := m[part]
		if !ok {
			return fmt.Errorf("unknown config key (no %q in %s)", part, orTop(strings.Join(parts[:i], ".")))
		}
		if i == len(parts)-1 {
			m[part] = v
			return nil
		}
		next, ok := cur.(map[string]any)
		if !ok {
			return fmt.Errorf("unknown config key (%s is not a section)", strings.Join(parts[:i+1], "."))
		}
		m = next
	}
	return nil
}

func orTop(s string) string {
	if s == "" {
		return "the config"
	}
	return s
}
