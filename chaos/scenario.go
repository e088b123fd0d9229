package chaos

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"spate/backup"
	"spate/control"
	"spate/internal/breaks"
	"spate/stores"
)

// Scenario is a parsed scenario file: the cluster to start, the schedule of
// faults and the checks that give the verdict.
type Scenario struct {
	File        string // as given to Parse; errors name it
	Name        string
	Description string

	// Cluster is the cluster: block as flags of `spate up`, one
	// "--name=value" element per key, in file order, ready for
	// coord.ParseUp. It never holds --data, --headless or --script.
	Cluster []string
	// ClusterLines maps a flag name ("nodes") to its line in the file, so
	// that an error of coord.ParseUp can be placed.
	ClusterLines map[string]int
	// Nodes is the cluster size targets were checked against (cluster:
	// nodes, 4 by default); Duration is cluster: duration (0: not given);
	// CoordTimeout is cluster: coord-timeout, how long the nodes wait for
	// a coordinator that went away (0: not given, coord's default).
	Nodes        int
	Duration     time.Duration
	CoordTimeout time.Duration
	// FileDuration is cluster: duration as the file gives it, before any
	// --set (0: not given); Cut compares the two.
	FileDuration time.Duration

	Schedule []Entry
	Checks   []Check

	// Expect is the verdict the scenario is written to get: ExpectPass
	// (the default) or ExpectFail, for a scenario that shows a failure
	// (a kill under --ft none): then a failing verdict is the success.
	Expect string
	// Set holds the --set overrides applied, KEY to VALUE, so that an
	// error of coord.ParseUp about one names --set, not a line.
	Set map[string]string
}

// KillsCoordinator reports whether the schedule kills the coordinator
// (kill coordinator): such a run needs RunOptions.KillCoordinator, and
// ResumeCoordinator when a kill has resume_after:.
func (sc *Scenario) KillsCoordinator() bool {
	for _, e := range sc.Schedule {
		if e.Random == nil && e.Action.Verb == "kill" && e.Action.Target == Coord {
			return true
		}
	}
	return false
}

// The verdicts a scenario may expect.
const (
	ExpectPass = "pass"
	ExpectFail = "fail"
)

// Override is one --set KEY=VALUE of `spate chaos run`: KEY is a field of
// cluster: (nodes, rate, ft, ...), or seed, which sets the cluster's seed
// and the seed of every random: entry of the schedule.
type Override struct {
	Key, Value string
}

// ParseOverride reads "KEY=VALUE".
func ParseOverride(kv string) (Override, error) {
	k, v, ok := strings.Cut(kv, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return Override{}, fmt.Errorf("--set %s: want KEY=VALUE, e.g. --set nodes=5", kv)
	}
	return Override{Key: k, Value: strings.TrimSpace(v)}, nil
}

// Entry is one item of schedule:. Exactly one of three forms:
//
//   - at: Action once, At after the job started;
//   - every: Action at At (default Every), At+Every, ... before Until;
//   - random: Random's faults at random times.
type Entry struct {
	Line   int
	At     time.Duration
	Every  time.Duration  // 0 unless every:
	Until  time.Duration  // every: the end (0: the run's end)
	Action control.Action // at: and every:
	Random *Random        // random:
}

// Random is a random: entry: faults drawn uniformly from Faults at
// exponentially distributed intervals of mean Mean, from From until Until
// (0: the run's end), each lasting For, on Target. Deterministic by Seed.
type Random struct {
	Seed   uint64
	Mean   time.Duration
	Faults []string
	For    time.Duration
	Target string
	From   time.Duration
	Until  time.Duration
	// Burst is the most faults one draw makes (1: one; up to Burst, the
	// first at the drawn time and each next one up to Gap after it), so
	// that faults come two or three close together.
	Burst int
	Gap   time.Duration
}

// Check is one item of checks:.
type Check struct {
	Name  string        // exactly_once, all_recovered, max_recovery, max_lag, max_checkpoint, min_throughput
	Limit time.Duration // max_recovery, max_lag, max_checkpoint
	Min   float64       // min_throughput, records/s
	Line  int
}

// String is the check as written: "max_lag: 10s".
func (c Check) String() string {
	switch c.Name {
	case CheckMaxRecovery, CheckMaxLag, CheckMaxCheckpoint:
		return c.Name + ": " + c.Limit.String()
	case CheckMinThroughput:
		return c.Name + ": " + strconv.FormatFloat(c.Min, 'f', -1, 64)
	}
	return c.Name
}

// The checks a scenario may ask for.
const (
	CheckExactlyOnce   = "exactly_once"   // nothing lost, duplicated or wrong
	CheckAllRecovered  = "all_recovered"  // every lost instance recovered before the run ended
	CheckMaxRecovery   = "max_recovery"   // the longest recovery, detection to caught up
	CheckMaxLag        = "max_lag"        // the largest output lag sample
	CheckMaxCheckpoint = "max_checkpoint" // p99 of a checkpoint's total time
	CheckMinThroughput = "min_throughput" // records read per second of job time
)

// Error is a bad scenario: the file, the line, the field and what is wrong,
// on one line.
type Error struct {
	File  string
	Line  int
	Field string // a path: schedule[2].latency; empty for the file itself
	Msg   string
}

func (e *Error) Error() string {
	if e.Line == 0 && e.Field == "" {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Msg)
}

// The fault verbs of a schedule.
var faultVerbs = []string{"kill", "restart", "pause", "resume", "partition", "link", "store", "heal", "scale"}

// randomVerbs are the faults a random: entry may draw.
// corrupt is a store fault that damages the target's newest checkpoints;
// scale rescales count or rollup to 1-4 instances.
var randomVerbs = []string{"kill", "restart", "pause", "partition", "link", "store", "corrupt", "scale"}

// lasting are the verbs that take for:.
var lasting = map[string]bool{"pause": true, "partition": true, "link": true, "store": true}

// coordNames are the ways a scenario names the coordinator as a target:
// coord, as `spate chaos pause coord` and the partition plans spell it,
// and coordinator. Both become the action's target Coord.
var coordNames = []string{Coord, "coordinator"}

// ResumeAfter is the argument of a `kill coord` step that starts a new
// coordinator (`spate up --resume`) that long after the kill.
const ResumeAfter = "resume_after"

// Limits that keep a scenario's plan small whatever the file says.
const (
	// MaxSteps is the most steps a plan holds; Parse refuses a schedule
	// that would make more, Plan stops there.
	MaxSteps = 10000
	// MaxNodes is the largest cluster (as coord allows).
	MaxNodes = 64
	maxInput = 1 << 20
)

// The windowcount job's operators and default parallelism, to check
// operator and instance targets.
var defaultParallelism = map[string]int{"source": 2, "count": 2, "rollup": 2, "sink": 2}

var (
	nodeRE      = regexp.MustCompile(`^n([1-9][0-9]*)$`)
	instanceRE  = regexp.MustCompile(`^([a-z]+)[/#]([0-9]+)$`)
	bandwidthRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([kKmMgG]i?)?[bB]/s$`)
)

// Parse reads a scenario file. file names it in errors; data is its text.
// Every error is an *Error: one line, "FILE:LINE: field: what is wrong".
// Parse never panics.
func Parse(file string, data []byte) (*Scenario, error) {
	return ParseWith(file, data, nil)
}

// ParseWith is Parse with overrides of the cluster: block, applied (and
// checked, as the file's own values are) before the schedule's targets
// are checked against the cluster. An error in an override is one line
// naming it: "--set nodes=x: want a whole number, got a string".
func ParseWith(file string, data []byte, set []Override) (*Scenario, error) {
	p := &scParser{file: file, set: set}
	if len(data) > maxInput {
		return nil, p.errAt(1, "", "file too large (%d bytes, at most %d)", len(data), maxInput)
	}
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	return p.scenario(root)
}

type scParser struct {
	file string
	sc   *Scenario
	par  map[string]int
	set  []Override
}

func (p *scParser) errAt(line int, field, format string, args ...any) error {
	if line < 1 {
		line = 1
	}
	return &Error{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (p *scParser) errf(n ast.Node, field, format string, args ...any) error {
	return p.errAt(lineOf(n), field, format, args...)
}

func lineOf(n ast.Node) int {
	if n == nil {
		return 0
	}
	if mv, ok := n.(*ast.MappingValueNode); ok && mv.Key != nil {
		n = mv.Key
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

// document parses the YAML text and returns its one document's body.
func (p *scParser) document(data []byte) (root ast.Node, err error) {
	defer func() {
		// The YAML library is not ours; a panic in it on strange input
		// is still a bad file, not a crash.
		if r := recover(); r != nil {
			root, err = nil, p.errAt(1, "", "yaml: cannot parse: %v", r)
		}
	}()
	f, perr := parser.ParseBytes(data, 0)
	if perr != nil {
		var ye yaml.Error
		line := 1
		msg := perr.Error()
		if errors.As(perr, &ye) {
			msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				line = tk.Position.Line
			}
		}
		msg, _, _ = strings.Cut(msg, "\n")
		return nil, p.errAt(line, "", "yaml: %s", msg)
	}
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	switch {
	case len(docs) == 0:
		return nil, p.errAt(1, "", "empty scenario: want name, cluster, schedule and checks")
	case len(docs) > 1:
		return nil, p.errf(docs[1].Body, "", "more than one YAML document")
	}
	return docs[0].Body, nil
}

// field is one key: value of a mapping.
type field struct {
	key   string
	line  int
	value ast.Node
}

// unwrap strips tags and anchors; aliases are refused (they could make a
// small file expand without bound).
func (p *scParser) unwrap(n ast.Node, path string) (ast.Node, error) {
	for range 16 {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			return nil, p.errf(v, path, "aliases are not supported")
		default:
			return n, nil
		}
	}
	return nil, p.errf(n, path, "too deeply tagged")
}

// mapping returns the fields of a mapping node, in order, refusing
// duplicate and non-scalar keys.
func (p *scParser) mapping(n ast.Node, path string) ([]field, error) {
	n, err := p.unwrap(n, path)
	if err != nil {
		return nil, err
	}
	var pairs []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		pairs = v.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{v}
	default:
		return nil, p.errf(n, path, "want a mapping (key: value lines), got %s", describe(n))
	}
	var out []field
	seen := map[string]bool{}
	for _, mv := range pairs {
		if mv == nil || mv.Key == nil {
			continue
		}
		k, ok := mv.Key.(ast.ScalarNode)
		if !ok || k.GetToken() == nil {
			return nil, p.errf(mv, path, "a key must be a plain word")
		}
		if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
			return nil, p.errf(mv, path, "merge keys (<<) are not supported")
		}
		key := k.GetToken().Value
		if seen[key] {
			return nil, p.errf(mv, join(path, key), "duplicate field")
		}
		seen[key] = true
		val := mv.Value
		if val == nil {
			val = &ast.NullNode{BaseNode: &ast.BaseNode{}, Token: mv.Key.GetToken()}
		}
		out = append(out, field{key: key, line: lineOf(mv), value: val})
	}
	return out, nil
}

func (p *scParser) sequence(n ast.Node, path string) ([]ast.Node, error) {
	n, err := p.unwrap(n, path)
	if err != nil {
		return nil, err
	}
	if _, null := n.(*ast.NullNode); null {
		return nil, nil
	}
	s, ok := n.(*ast.SequenceNode)
	if !ok {
		return nil, p.errf(n, path, "want a list, got %s", describe(n))
	}
	return s.Values, nil
}

func describe(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode, nil:
		return "nothing"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	}
	return "a string"
}

// scalar returns the text of a scalar node.
func (p *scParser) scalar(n ast.Node, path string) (string, error) {
	n, err := p.unwrap(n, path)
	if err != nil {
		return "", err
	}
	switch v := n.(type) {
	case *ast.NullNode:
		return "", p.errf(n, path, "missing value")
	case *ast.StringNode:
		return strings.TrimSpace(v.Value), nil
	case *ast.LiteralNode:
		return "", p.errf(n, path, "want one line, not a block")
	case ast.ScalarNode:
		if tk := v.GetToken(); tk != nil {
			return strings.TrimSpace(tk.Value), nil
		}
		return fmt.Sprint(v.GetValue()), nil
	}
	return "", p.errf(n, path, "want a single value, got %s", describe(n))
}

func (p *scParser) str(n ast.Node, path string) (string, error) {
	s, err := p.scalar(n, path)
	if err == nil && s == "" {
		err = p.errf(n, path, "empty")
	}
	return s, err
}

func (p *scParser) duration(n ast.Node, path string) (time.Duration, string, error) {
	s, err := p.scalar(n, path)
	if err != nil {
		return 0, "", err
	}
	d, perr := time.ParseDuration(s)
	if perr != nil {
		return 0, "", p.errf(n, path, "%q is not a duration (want e.g. 500ms, 5s, 2m)", s)
	}
	if d < 0 {
		return 0, "", p.errf(n, path, "%s: must not be negative", s)
	}
	return d, s, nil
}

func (p *scParser) positive(n ast.Node, path string) (time.Duration, string, error) {
	d, s, err := p.duration(n, path)
	if err == nil && d == 0 {
		err = p.errf(n, path, "must be positive")
	}
	return d, s, err
}

func (p *scParser) boolean(n ast.Node, path string) (bool, error) {
	u, err := p.unwrap(n, path)
	if err != nil {
		return false, err
	}
	b, ok := u.(*ast.BoolNode)
	if !ok {
		return false, p.errf(n, path, "want true or false, got %s", describe(u))
	}
	return b.Value, nil
}

func (p *scParser) integer(n ast.Node, path string) (int64, error) {
	u, err := p.unwrap(n, path)
	if err != nil {
		return 0, err
	}
	in, ok := u.(*ast.IntegerNode)
	if !ok {
		return 0, p.errf(n, path, "want a whole number, got %s", describe(u))
	}
	switch v := in.Value.(type) {
	case int64:
		return v, nil
	case uint64:
		if v <= math.MaxInt64 {
			return int64(v), nil
		}
	}
	return 0, p.errf(n, path, "number out of range")
}

func (p *scParser) number(n ast.Node, path string) (float64, error) {
	u, err := p.unwrap(n, path)
	if err != nil {
		return 0, err
	}
	var f float64
	switch v := u.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			f = float64(x)
		case uint64:
			f = float64(x)
		}
	case *ast.FloatNode:
		f = v.Value
	default:
		return 0, p.errf(n, path, "want a number, got %s", describe(u))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, p.errf(n, path, "want a finite number")
	}
	return f, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (p *scParser) scenario(root ast.Node) (*Scenario, error) {
	fields, err := p.mapping(root, "")
	if err != nil {
		return nil, err
	}
	sc := &Scenario{File: p.file, Nodes: 4, ClusterLines: map[string]int{}, Expect: ExpectPass}
	p.sc = sc
	p.par = maps.Clone(defaultParallelism)
	byKey := map[string]field{}
	for _, f := range fields {
		switch f.key {
		case "name", "description", "cluster", "schedule", "checks", "expect":
			byKey[f.key] = f
		default:
			return nil, p.errAt(f.line, f.key, "unknown field (want name, description, cluster, schedule, checks, expect)")
		}
	}
	// cluster first: the schedule's targets are checked against it.
	if f, ok := byKey["cluster"]; ok {
		if err := p.cluster(f); err != nil {
			return nil, err
		}
	}
	if err := p.overrides(); err != nil {
		return nil, err
	}
	if f, ok := byKey["expect"]; ok {
		v, err := p.str(f.value, "expect")
		if err != nil {
			return nil, err
		}
		if v != ExpectPass && v != ExpectFail {
			return nil, p.errf(f.value, "expect", "%q: want pass or fail", v)
		}
		sc.Expect = v
	}
	f, ok := byKey["name"]
	if !ok {
		return nil, p.errAt(1, "name", "missing: every scenario needs a name")
	}
	if sc.Name, err = p.str(f.value, "name"); err != nil {
		return nil, err
	}
	if f, ok := byKey["description"]; ok {
		if sc.Description, err = p.scalar(f.value, "description"); err != nil {
			return nil, err
		}
	}
	f, ok = byKey["schedule"]
	if !ok {
		return nil, p.errAt(1, "schedule", "missing: list the faults (schedule: [] for none)")
	}
	items, err := p.sequence(f.value, "schedule")
	if err != nil {
		return nil, err
	}
	steps := 0
	for i, it := range items {
		e, err := p.entry(it, fmt.Sprintf("schedule[%d]", i))
		if err != nil {
			return nil, err
		}
		n, err := p.countSteps(e, fmt.Sprintf("schedule[%d]", i))
		if err != nil {
			return nil, err
		}
		if steps += n; steps > MaxSteps {
			return nil, p.errAt(e.Line, fmt.Sprintf("schedule[%d]", i), "the schedule makes more than %d steps", MaxSteps)
		}
		sc.Schedule = append(sc.Schedule, e)
	}
	if seed, ok := sc.Set["seed"]; ok {
		n, _ := strconv.ParseUint(seed, 10, 64) // checked as cluster: seed
		for _, e := range sc.Schedule {
			if e.Random != nil {
				e.Random.Seed = n
			}
		}
	}
	if f, ok := byKey["checks"]; ok {
		if sc.Checks, err = p.checks(f); err != nil {
			return nil, err
		}
	} else {
		sc.Checks = []Check{{Name: CheckExactlyOnce}}
	}
	return sc, nil
}

// countSteps bounds how many steps an entry makes, and refuses a
// repeating entry with no end.
func (p *scParser) countSteps(e Entry, path string) (int, error) {
	end := p.sc.Duration
	switch {
	case e.Every > 0:
		if e.Until > 0 {
			end = e.Until
		}
		if end == 0 {
			return 0, p.errAt(e.Line, path+".every", "repeats forever: give cluster: duration or until:")
		}
		if e.At >= end {
			return 0, nil
		}
		return int((end-e.At)/e.Every) + 1, nil
	case e.Random != nil:
		if e.Random.Until > 0 {
			end = e.Random.Until
		}
		if end == 0 {
			return 0, p.errAt(e.Line, path+".random", "repeats forever: give cluster: duration or until:")
		}
		if end <= e.Random.From {
			return 0, nil
		}
		// The mean number; Plan stops at MaxSteps whatever the draw.
		n := float64(end-e.Random.From) / float64(e.Random.Mean)
		if n > MaxSteps {
			return 0, p.errAt(e.Line, path+".random.mean", "%v over %v makes about %.0f faults, more than %d", e.Random.Mean, end-e.Random.From, n, MaxSteps)
		}
		return int(n), nil
	}
	return 1, nil
}

// clusterFlag says how a cluster: key is checked.
type clusterFlag int

const (
	flagInt clusterFlag = iota
	flagNumber
	flagDuration
	flagString
	flagBool
)

// clusterFlags are the flags of `spate up` a cluster: block takes (all of
// them but data, headless, script and resume, which `spate chaos run`
// sets).
var clusterFlags = map[string]clusterFlag{
	"nodes": flagInt, "local": flagInt, "keys": flagInt, "seed": flagInt,
	"rate": flagNumber, "speedup": flagNumber,
	"duration": flagDuration, "window": flagDuration, "lateness": flagDuration, "timeout": flagDuration, "heartbeat": flagDuration, "flush": flagDuration, "coord-timeout": flagDuration,
	"job": flagString, "source": flagString, "ft": flagString, "interval": flagString, "events": flagString, "listen": flagString,
	"parallelism": flagString, "backup-mem": flagString, "backup-full": flagString, "recover-on": flagString, "recover": flagString,
	"failures": flagString, "rescale": flagString, "cost": flagString, "store": flagString, "break": flagString,
	"respawn": flagBool, "autoscale": flagBool, "check-invariants": flagBool, "tls": flagBool, "metrics": flagString,
}

// runnerFlags are the flags of `spate up` that `spate chaos run` sets
// (resume: for the new coordinator after a kill coordinator).
var runnerFlags = []string{"data", "headless", "script", "resume"}

// ClusterKeys are the fields a cluster: block takes, sorted: the flags of
// `spate up` but those `spate chaos run` sets (RunnerKeys).
func ClusterKeys() []string { return sortedKeys(clusterFlags) }

// RunnerKeys are the flags of `spate up` a scenario may not set.
func RunnerKeys() []string { return slices.Clone(runnerFlags) }

func (p *scParser) cluster(f field) error {
	fields, err := p.mapping(f.value, "cluster")
	if err != nil {
		if u, _ := p.unwrap(f.value, "cluster"); u != nil {
			if _, null := u.(*ast.NullNode); null {
				return nil
			}
		}
		return err
	}
	for _, c := range fields {
		if err := p.clusterField(c); err != nil {
			return err
		}
	}
	return nil
}

// overrides applies the --set overrides to the cluster: flags.
func (p *scParser) overrides() error {
	p.sc.FileDuration = p.sc.Duration
	for _, o := range p.set {
		kv := o.Key + "=" + o.Value
		wrap := func(err error) error {
			var e *Error
			if errors.As(err, &e) {
				return &Error{File: "--set " + kv, Msg: e.Msg}
			}
			return fmt.Errorf("--set %s: %v", kv, err)
		}
		kind, ok := clusterFlags[o.Key]
		if !ok {
			if o.Key == "data" {
				return &Error{File: "--set " + kv, Msg: "set by `spate chaos run` itself (give --data to chaos run)"}
			}
			if slices.Contains(runnerFlags, o.Key) {
				return &Error{File: "--set " + kv, Msg: "set by `spate chaos run` itself"}
			}
			return &Error{File: "--set " + kv, Msg: "unknown key (want a field of cluster: " + strings.Join(sortedKeys(clusterFlags), ", ") + ")"}
		}
		text := o.Value
		if kind == flagString {
			text = strconv.Quote(o.Value)
		}
		root, err := (&scParser{file: p.file}).document([]byte("v: " + text + "\n"))
		if err != nil {
			return wrap(err)
		}
		fields, err := p.mapping(root, "--set")
		if err != nil || len(fields) != 1 {
			return &Error{File: "--set " + kv, Msg: "not a single value"}
		}
		f := fields[0]
		f.key = o.Key
		if o.Key == "parallelism" { // the flag replaces the file's, as a later --parallelism would
			p.par = maps.Clone(defaultParallelism)
		}
		if err := p.clusterField(f); err != nil {
			return wrap(err)
		}
		if p.sc.Set == nil {
			p.sc.Set = map[string]string{}
		}
		p.sc.Set[o.Key] = o.Value
		p.sc.ClusterLines[o.Key] = 0
	}
	return nil
}

// clusterField checks one field of cluster: and sets it as a flag (a
// later one, an override, replaces an earlier one).
func (p *scParser) clusterField(c field) error {
	sc := p.sc
	var err error
	{
		path := "cluster." + c.key
		kind, ok := clusterFlags[c.key]
		if !ok {
			if slices.Contains(runnerFlags, c.key) {
				return p.errAt(c.line, path, "set by `spate chaos run`, not by the scenario")
			}
			return p.errAt(c.line, path, "unknown field (want a flag of `spate up`: %s)", strings.Join(sortedKeys(clusterFlags), ", "))
		}
		var val string
		switch kind {
		case flagBool:
			b, err := p.boolean(c.value, path)
			if err != nil {
				return err
			}
			val = strconv.FormatBool(b)
		case flagInt:
			n, err := p.integer(c.value, path)
			if err != nil {
				return err
			}
			switch c.key {
			case "nodes":
				if n < 1 || n > MaxNodes {
					return p.errf(c.value, path, "%d out of range 1..%d", n, MaxNodes)
				}
				sc.Nodes = int(n)
			case "local", "keys":
				if n < 0 {
					return p.errf(c.value, path, "must not be negative")
				}
			}
			val = strconv.FormatInt(n, 10)
		case flagNumber:
			x, err := p.number(c.value, path)
			if err != nil {
				return err
			}
			if x < 0 {
				return p.errf(c.value, path, "must not be negative")
			}
			val = strconv.FormatFloat(x, 'f', -1, 64)
		case flagDuration:
			d, s, err := p.duration(c.value, path)
			if err != nil {
				return err
			}
			switch c.key {
			case "duration":
				sc.Duration = d
			case "coord-timeout":
				sc.CoordTimeout = d
			}
			val = s
		case flagString:
			if c.key == "parallelism" {
				if val, err = p.parallelism(c.value, path); err != nil {
					return err
				}
				break
			}
			if val, err = p.str(c.value, path); err != nil {
				return err
			}
			switch c.key {
			case "ft":
				if val != "spate" && val != "global" && val != "none" {
					return p.errf(c.value, path, "%q: want spate, global or none", val)
				}
			case "job":
				if val != "windowcount" {
					return p.errf(c.value, path, "unknown job %q (have windowcount)", val)
				}
			case "interval":
				if d, err := time.ParseDuration(val); val != "auto" && (err != nil || d <= 0) {
					return p.errf(c.value, path, "%q: want auto or a positive duration", val)
				}
			case "backup-mem":
				if _, err := backup.ParseSize(val); err != nil {
					return p.errf(c.value, path, "%v", err)
				}
			case "backup-full":
				if val != "spill" && val != "block" {
					return p.errf(c.value, path, "%q: want spill or block", val)
				}
			case "recover-on":
				if val != "survivors" && val != "respawned" {
					return p.errf(c.value, path, "%q: want survivors or respawned", val)
				}
			case "recover":
				if val != "single" && val != "parallel" {
					return p.errf(c.value, path, "%q: want single or parallel", val)
				}
			case "rescale":
				if val != "eds" && val != "restart" {
					return p.errf(c.value, path, "%q: want eds or restart", val)
				}
			case "store":
				if _, err := stores.Parse(val); err != nil {
					return p.errf(c.value, path, "%v", err)
				}
			case "break":
				if _, err := breaks.Parse(val); err != nil {
					return p.errf(c.value, path, "%v", err)
				}
			}
		}
		flag := "--" + c.key + "="
		sc.Cluster = slices.DeleteFunc(sc.Cluster, func(s string) bool { return strings.HasPrefix(s, flag) })
		sc.Cluster = append(sc.Cluster, flag+val)
		sc.ClusterLines[c.key] = c.line
	}
	return nil
}

// parallelism accepts {count: 4, sink: 1} or "count=4,sink=1" and
// returns the flag's value.
func (p *scParser) parallelism(n ast.Node, path string) (string, error) {
	var parts []string
	set := func(op string, k int64, at ast.Node) error {
		if _, ok := defaultParallelism[op]; !ok {
			return p.errf(at, path, "unknown operator %q (have count, rollup, sink, source)", op)
		}
		if k < 1 || k > 128 {
			return p.errf(at, path+"."+op, "%d out of range 1..128", k)
		}
		p.par[op] = int(k)
		parts = append(parts, fmt.Sprintf("%s=%d", op, k))
		return nil
	}
	if u, err := p.unwrap(n, path); err == nil {
		if _, ok := u.(*ast.StringNode); ok {
			s, _ := p.scalar(u, path)
			for _, kv := range strings.Split(s, ",") {
				op, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
				k, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if !ok || err != nil {
					return "", p.errf(n, path, "%q: want OP=N", kv)
				}
				if err := set(strings.TrimSpace(op), k, n); err != nil {
					return "", err
				}
			}
			return strings.Join(parts, ","), nil
		}
	}
	fields, err := p.mapping(n, path)
	if err != nil {
		return "", p.errf(n, path, "want a mapping like {count: 4} or \"count=4\"")
	}
	for _, f := range fields {
		k, err := p.integer(f.value, path+"."+f.key)
		if err != nil {
			return "", err
		}
		if err := set(f.key, k, f.value); err != nil {
			return "", err
		}
	}
	return strings.Join(parts, ","), nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// DamageFiles are the files of an instance's checkpoint chain a store
// fault's file: damages: the newest file (what corrupt: true damages),
// the base of the latest restorable checkpoint's chain, the fallback
// checkpoint's own file.
var DamageFiles = []string{"newest", "base", "fallback"}

// verbFields are the fields each fault takes beyond at/every/until/fault.
var verbFields = map[string][]string{
	"kill":      {"target", ResumeAfter}, // resume_after: the coordinator only
	"restart":   {"target"},
	"pause":     {"target", "for"},
	"resume":    {"target"},
	"partition": {"target", "shape", "groups", "oneway", "for"},
	"link":      {"target", "latency", "jitter", "bandwidth", "stall", "reset", "for"},
	"store":     {"target", "slow", "fail", "corrupt", "file", "for"},
	"heal":      {"target"},
	"scale":     {"op", "n"},
}

func (p *scParser) entry(n ast.Node, path string) (Entry, error) {
	e := Entry{Line: lineOf(n)}
	fields, err := p.mapping(n, path)
	if err != nil {
		return e, err
	}
	byKey := map[string]field{}
	for _, f := range fields {
		byKey[f.key] = f
	}
	if f, ok := byKey["random"]; ok {
		for _, g := range fields {
			if g.key != "random" {
				return e, p.errAt(g.line, join(path, g.key), "unknown field beside random: (put it inside random:)")
			}
		}
		e.Line = f.line
		e.Random, err = p.random(f.value, path+".random")
		return e, err
	}
	_, hasAt := byKey["at"]
	_, hasEvery := byKey["every"]
	if !hasAt && !hasEvery {
		return e, p.errAt(e.Line, path, "missing at:, every: or random:")
	}
	ff, ok := byKey["fault"]
	if !ok {
		return e, p.errAt(e.Line, path+".fault", "missing: which fault (%s)", strings.Join(faultVerbs, ", "))
	}
	verb, err := p.str(ff.value, path+".fault")
	if err != nil {
		return e, err
	}
	allowed, ok := verbFields[verb]
	if !ok {
		return e, p.errf(ff.value, path+".fault", "unknown fault %q (want %s)", verb, strings.Join(faultVerbs, ", "))
	}
	e.Action = control.Action{Verb: verb, Args: map[string]string{}}
	for _, f := range fields {
		fp := join(path, f.key)
		switch f.key {
		case "fault":
		case "at":
			if e.At, _, err = p.duration(f.value, fp); err != nil {
				return e, err
			}
		case "every":
			if e.Every, _, err = p.positive(f.value, fp); err != nil {
				return e, err
			}
		case "until":
			if !hasEvery {
				return e, p.errAt(f.line, fp, "only an every: entry has an end")
			}
			if e.Until, _, err = p.positive(f.value, fp); err != nil {
				return e, err
			}
		default:
			if f.key == ResumeAfter && verb != "kill" {
				return e, p.errAt(f.line, fp, "only kill takes resume_after (kill coordinator, to start a new coordinator that long after)")
			}
			if !slices.Contains(allowed, f.key) {
				return e, p.errAt(f.line, fp, "unknown field for %s (it takes at, every, until, %s)", verb, strings.Join(allowed, ", "))
			}
			if err := p.arg(&e.Action, f, fp); err != nil {
				return e, err
			}
		}
	}
	if hasEvery && !hasAt {
		e.At = e.Every
	}
	if e.Until > 0 && e.Until <= e.At {
		return e, p.errAt(byKey["until"].line, path+".until", "ends before the first fault at %v", e.At)
	}
	if err := p.checkAction(e.Action, e.Line, path); err != nil {
		return e, err
	}
	if err := p.checkCoordKill(e, byKey, path); err != nil {
		return e, err
	}
	if len(e.Action.Args) == 0 {
		e.Action.Args = nil
	}
	return e, nil
}

// checkCoordKill checks an entry that kills the coordinator, or gives
// resume_after: to a kill of anything else.
func (p *scParser) checkCoordKill(e Entry, byKey map[string]field, path string) error {
	ra, hasResume := byKey[ResumeAfter]
	if e.Action.Target != Coord {
		if hasResume {
			return p.errAt(ra.line, path+"."+ResumeAfter, "only the coordinator is resumed (target: coordinator); a node comes back with fault: restart")
		}
		return nil
	}
	if !hasResume {
		if p.sc.Expect != ExpectFail {
			// Nothing finishes the job, so every check would fail: a
			// scenario that cannot pass is a mistake unless it says so.
			return p.errAt(e.Line, path+"."+ResumeAfter, "missing: a coordinator never resumed cannot finish the run, so no check can pass; give resume_after: D (or expect: fail)")
		}
		return nil
	}
	if d, _ := time.ParseDuration(e.Action.Args[ResumeAfter]); e.Every > 0 && d >= e.Every {
		return p.errAt(ra.line, path+"."+ResumeAfter, "%v is not shorter than every: %v: the next kill would find the coordinator still down", d, e.Every)
	}
	return nil
}

// arg checks one verb-specific field and adds it to a's Args (the target
// goes to a.Target).
func (p *scParser) arg(a *control.Action, f field, path string) error {
	switch f.key {
	case "target":
		t, err := p.str(f.value, path)
		if err != nil {
			return err
		}
		if slices.Contains(coordNames, t) {
			// Only a kill reaches the coordinator from a scenario: the
			// runner kills its process, which the control API (the
			// coordinator itself) cannot do.
			if a.Verb != "kill" {
				return p.errf(f.value, path, "%q: only kill takes the coordinator as a target (with resume_after: D, a new coordinator goes on with the run)", t)
			}
			a.Target = Coord
			return nil
		}
		if err := p.target(t, f.value, path); err != nil {
			return err
		}
		a.Target = t
	case "op": // scale: the operator, as `spate scale OP N` sends it
		op, err := p.str(f.value, path)
		if err != nil {
			return err
		}
		if op != "count" && op != "rollup" {
			return p.errf(f.value, path, "%q: only count and rollup scale", op)
		}
		a.Target = op
	case "n":
		n, err := p.integer(f.value, path)
		if err != nil {
			return err
		}
		if n < 1 || n > 128 {
			return p.errf(f.value, path, "%d out of range 1..128", n)
		}
		a.Args["n"] = strconv.FormatInt(n, 10)
	case "for", "latency", "jitter", "slow", ResumeAfter:
		_, s, err := p.positive(f.value, path)
		if err != nil {
			return err
		}
		a.Args[f.key] = s
	case "file": // store: which file of the target's chain to damage
		s, err := p.str(f.value, path)
		if err != nil {
			return err
		}
		if !slices.Contains(DamageFiles, s) {
			return p.errf(f.value, path, "unknown file %q (want %s)", s, strings.Join(DamageFiles, ", "))
		}
		a.Args[f.key] = s
	case "shape":
		s, err := p.str(f.value, path)
		if err != nil {
			return err
		}
		if s != "one" && s != "majority" && s != "bridge" {
			return p.errf(f.value, path, "unknown shape %q (want one, majority or bridge, or give groups:)", s)
		}
		a.Args[f.key] = s
	case "groups":
		s, err := p.groups(f.value, path)
		if err != nil {
			return err
		}
		a.Args[f.key] = s
	case "bandwidth":
		s, err := p.str(f.value, path)
		if err != nil {
			return err
		}
		if _, err := ParseBandwidth(s); err != nil {
			return p.errf(f.value, path, "%v", err)
		}
		a.Args[f.key] = s
	case "oneway", "stall", "reset", "fail", "corrupt":
		b, err := p.boolean(f.value, path)
		if err != nil {
			return err
		}
		if b {
			a.Args[f.key] = "true"
		}
	default:
		return p.errAt(f.line, path, "unknown field")
	}
	return nil
}

// checkAction checks what an action needs as a whole.
func (p *scParser) checkAction(a control.Action, line int, path string) error {
	has := func(k string) bool { _, ok := a.Args[k]; return ok }
	switch a.Verb {
	case "kill", "restart", "pause", "resume", "link":
		if a.Target == "" {
			return p.errAt(line, path+".target", "missing: %s needs a target (a node, one, minority, majority, all, an operator or an instance)", a.Verb)
		}
	case "partition":
		switch {
		case has("shape") && has("groups"):
			return p.errAt(line, path+".groups", "give shape: or groups:, not both")
		case !has("shape") && !has("groups"):
			return p.errAt(line, path+".shape", "missing: partition needs shape: (one, majority, bridge) or groups:")
		case has("groups") && a.Target != "":
			return p.errAt(line, path+".target", "groups: already names the nodes")
		}
	}
	switch a.Verb {
	case "scale":
		switch {
		case a.Target == "":
			return p.errAt(line, path+".op", "missing: scale needs op: (count or rollup)")
		case !has("n"):
			return p.errAt(line, path+".n", "missing: scale needs n: (the new number of instances)")
		}
		// The instances a scale-out makes are targets of the entries
		// after it (count#3 once count has 4).
		if n, _ := strconv.Atoi(a.Args["n"]); n > p.par[a.Target] {
			p.par[a.Target] = n
		}
	case "link":
		if !has("latency") && !has("jitter") && !has("bandwidth") && !has("stall") && !has("reset") {
			return p.errAt(line, path, "link needs latency:, jitter:, bandwidth:, stall: true or reset: true")
		}
	case "store":
		n := 0
		for _, k := range []string{"slow", "fail", "corrupt"} {
			if has(k) {
				n++
			}
		}
		if has("file") && !has("corrupt") {
			n++ // file: names what to damage: corrupt: true is implied
		}
		if n != 1 {
			return p.errAt(line, path, "store needs exactly one of slow: DURATION, fail: true, corrupt: true (or file: base|newest|fallback)")
		}
	}
	return nil
}

// target checks a target against the cluster and the job.
func (p *scParser) target(t string, at ast.Node, path string) error {
	switch t {
	case "one", "minority", "majority", "all":
		return nil
	}
	if m := nodeRE.FindStringSubmatch(t); m != nil {
		k, err := strconv.Atoi(m[1])
		if err != nil || k > p.sc.Nodes {
			return p.errf(at, path, "unknown node %q (the cluster has n1..n%d)", t, p.sc.Nodes)
		}
		return nil
	}
	if par, ok := p.par[t]; ok && par > 0 {
		return nil
	}
	if m := instanceRE.FindStringSubmatch(t); m != nil {
		par, ok := p.par[m[1]]
		k, err := strconv.Atoi(m[2])
		if !ok {
			return p.errf(at, path, "unknown operator %q in %q (have count, rollup, sink, source)", m[1], t)
		}
		if err != nil || k >= par {
			return p.errf(at, path, "unknown instance %q (%s has instances 0..%d)", t, m[1], par-1)
		}
		return nil
	}
	return p.errf(at, path, "unknown target %q (want n1..n%d, one, minority, majority, all, an operator like count or an instance like count/1)", t, p.sc.Nodes)
}

// groups reads [[n1,n2],[n3,n4]] as "n1,n2|n3,n4".
func (p *scParser) groups(n ast.Node, path string) (string, error) {
	items, err := p.sequence(n, path)
	if err != nil {
		return "", err
	}
	if len(items) < 2 {
		return "", p.errf(n, path, "want at least two groups, like [[n1, n2], [n3, n4]]")
	}
	seen := map[string]bool{}
	var gs []string
	for i, it := range items {
		gp := fmt.Sprintf("%s[%d]", path, i)
		names, err := p.sequence(it, gp)
		if err != nil {
			return "", err
		}
		if len(names) == 0 {
			return "", p.errf(it, gp, "empty group")
		}
		var g []string
		for _, nn := range names {
			s, err := p.str(nn, gp)
			if err != nil {
				return "", err
			}
			m := nodeRE.FindStringSubmatch(s)
			if m == nil {
				return "", p.errf(nn, gp, "%q is not a node name (n1..n%d)", s, p.sc.Nodes)
			}
			if k, err := strconv.Atoi(m[1]); err != nil || k > p.sc.Nodes {
				return "", p.errf(nn, gp, "unknown node %q (the cluster has n1..n%d)", s, p.sc.Nodes)
			}
			if seen[s] {
				return "", p.errf(nn, gp, "%s is in two groups", s)
			}
			seen[s] = true
			g = append(g, s)
		}
		gs = append(gs, strings.Join(g, ","))
	}
	return strings.Join(gs, "|"), nil
}

func (p *scParser) random(n ast.Node, path string) (*Random, error) {
	fields, err := p.mapping(n, path)
	if err != nil {
		return nil, err
	}
	r := &Random{For: 3 * time.Second, Target: "one", Burst: 1, Gap: 500 * time.Millisecond}
	var haveSeed, haveMean, haveFaults bool
	for _, f := range fields {
		fp := join(path, f.key)
		switch f.key {
		case "seed":
			v, err := p.integer(f.value, fp)
			if err != nil {
				return nil, err
			}
			r.Seed, haveSeed = uint64(v), true
		case "mean":
			if r.Mean, _, err = p.positive(f.value, fp); err != nil {
				return nil, err
			}
			haveMean = true
		case "for":
			if r.For, _, err = p.positive(f.value, fp); err != nil {
				return nil, err
			}
		case "from":
			if r.From, _, err = p.duration(f.value, fp); err != nil {
				return nil, err
			}
		case "burst":
			v, err := p.integer(f.value, fp)
			if err != nil {
				return nil, err
			}
			if v < 1 || v > 5 {
				return nil, p.errf(f.value, fp, "%d faults a burst: want 1 to 5", v)
			}
			r.Burst = int(v)
		case "gap":
			if r.Gap, _, err = p.positive(f.value, fp); err != nil {
				return nil, err
			}
		case "until":
			if r.Until, _, err = p.positive(f.value, fp); err != nil {
				return nil, err
			}
		case "target":
			t, err := p.str(f.value, fp)
			if err != nil {
				return nil, err
			}
			if slices.Contains(coordNames, t) {
				return nil, p.errf(f.value, fp, "%q: random faults never target the coordinator (give kill coordinator an at: entry of its own)", t)
			}
			if err := p.target(t, f.value, fp); err != nil {
				return nil, err
			}
			r.Target = t
		case "faults":
			items, err := p.sequence(f.value, fp)
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				v, err := p.str(it, fp)
				if err != nil {
					return nil, err
				}
				if !slices.Contains(randomVerbs, v) {
					return nil, p.errf(it, fp, "unknown fault %q (random draws from %s)", v, strings.Join(randomVerbs, ", "))
				}
				r.Faults = append(r.Faults, v)
			}
			haveFaults = len(r.Faults) > 0
		default:
			return nil, p.errAt(f.line, fp, "unknown field (random takes seed, mean, faults, for, target, from, until, burst, gap)")
		}
	}
	line := lineOf(n)
	switch {
	case !haveSeed:
		return nil, p.errAt(line, path+".seed", "missing: a random schedule needs a seed")
	case !haveMean:
		return nil, p.errAt(line, path+".mean", "missing: the mean time between faults")
	case !haveFaults:
		return nil, p.errAt(line, path+".faults", "missing: the faults to draw from")
	case r.Until > 0 && r.Until <= r.From:
		return nil, p.errAt(line, path+".until", "ends before it starts (from %v)", r.From)
	}
	return r, nil
}

func (p *scParser) checks(f field) ([]Check, error) {
	items, err := p.sequence(f.value, "checks")
	if err != nil {
		return nil, err
	}
	var out []Check
	seen := map[string]bool{}
	for i, it := range items {
		path := fmt.Sprintf("checks[%d]", i)
		c, err := p.check(it, path)
		if err != nil {
			return nil, err
		}
		if seen[c.Name] {
			return nil, p.errAt(c.Line, path, "%s given twice", c.Name)
		}
		seen[c.Name] = true
		out = append(out, c)
	}
	return out, nil
}

func (p *scParser) check(n ast.Node, path string) (Check, error) {
	c := Check{Line: lineOf(n)}
	u, err := p.unwrap(n, path)
	if err != nil {
		return c, err
	}
	known := "exactly_once, all_recovered, max_recovery: D, max_lag: D, max_checkpoint: D, min_throughput: N"
	if _, ok := u.(*ast.StringNode); ok {
		c.Name, _ = p.scalar(u, path)
		switch c.Name {
		case CheckExactlyOnce, CheckAllRecovered:
			return c, nil
		case CheckMaxRecovery, CheckMaxLag, CheckMaxCheckpoint, CheckMinThroughput:
			return c, p.errf(n, path, "%s needs a limit (%s: ...)", c.Name, c.Name)
		}
		return c, p.errf(n, path, "unknown check %q (want %s)", c.Name, known)
	}
	fields, err := p.mapping(u, path)
	if err != nil {
		return c, p.errf(n, path, "want a check name or name: limit, got %s", describe(u))
	}
	if len(fields) != 1 {
		return c, p.errf(n, path, "one check per item")
	}
	f := fields[0]
	c.Name, c.Line = f.key, f.line
	fp := join(path, f.key)
	switch f.key {
	case CheckExactlyOnce, CheckAllRecovered:
		b, err := p.boolean(f.value, fp)
		if err != nil {
			return c, err
		}
		if !b {
			return c, p.errf(f.value, fp, "false: leave the check out instead")
		}
	case CheckMaxRecovery, CheckMaxLag, CheckMaxCheckpoint:
		c.Limit, _, err = p.positive(f.value, fp)
		return c, err
	case CheckMinThroughput:
		if c.Min, err = p.number(f.value, fp); err == nil && c.Min <= 0 {
			err = p.errf(f.value, fp, "must be positive (records/s)")
		}
		return c, err
	default:
		return c, p.errAt(f.line, fp, "unknown check (want %s)", known)
	}
	return c, nil
}

// ParseBandwidth reads a rate like "1MB/s", "512KiB/s" or "100B/s" as
// bytes per second (K, M, G are powers of 1000; Ki, Mi, Gi of 1024).
func ParseBandwidth(s string) (float64, error) {
	m := bandwidthRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a bandwidth (want e.g. 1MB/s, 512KiB/s)", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q: want a positive rate", s)
	}
	mult := 1.0
	switch strings.ToLower(m[2]) {
	case "k":
		mult = 1e3
	case "m":
		mult = 1e6
	case "g":
		mult = 1e9
	case "ki":
		mult = 1 << 10
	case "mi":
		mult = 1 << 20
	case "gi":
		mult = 1 << 30
	}
	return v * mult, nil
}
