package sim

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"spate/chaos"
	"spate/control"
)

// ScheduleFile is a seed's run written down: the seed (the generator's
// and the trace's, and whatever else of the run it seeds), the
// configuration (its axes and the duration) and the fault schedule.
// `spate sim --print-schedule` writes one (Format), `spate sim
// --schedule FILE` runs one (ParseSchedule, then Apply).
type ScheduleFile struct {
	Seed     uint64
	Duration time.Duration // until the drain; 0: the configuration's
	Axes     Axes          // an axis left out is the seed's draw
	Steps    []Step
}

// MinDuration is the shortest duration `spate sim` runs.
const MinDuration = 3 * time.Second

// ScheduleOf is seed's run under cfg as a file: its axes (every one,
// whether Wide drew them or the narrow nemesis took them as set), its
// duration and its schedule (Plan).
func ScheduleOf(seed uint64, cfg Config) ScheduleFile {
	r := Resolve(seed, cfg)
	w := r
	w.Wide = true
	return ScheduleFile{Seed: seed, Duration: r.Duration, Axes: axesOf(w), Steps: Plan(seed, cfg)}
}

// Apply is cfg as f runs it: the whole product's configuration with
// every axis pinned (those f leaves out drawn from its seed), f's
// duration and f's steps (an empty schedule stays empty: no fault).
func (f ScheduleFile) Apply(cfg Config) Config {
	cfg.Wide, cfg.Only = true, drawAxes(f.Seed, f.Axes)
	if f.Duration > 0 {
		cfg.Duration = f.Duration
	}
	cfg.Schedule = append([]Step{}, f.Steps...)
	return Resolve(f.Seed, cfg)
}

// Resolved is f with what it leaves to cfg and to its seed written out:
// every axis, and the duration. It runs as f does.
func (f ScheduleFile) Resolved(cfg Config) ScheduleFile {
	run := f.Apply(cfg)
	f.Axes, f.Duration = axesOf(run), run.Duration
	return f
}

// Format is f as the YAML ParseSchedule reads, each step on one line in
// the chaos DSL's step syntax (docs/scenarios.md): at, fault (the
// action's verb), target (op for scale), then the action's arguments by
// name. comment lines, if any, come first as # comments.
func (f ScheduleFile) Format(comment ...string) string {
	var b strings.Builder
	for _, c := range comment {
		for l := range strings.SplitSeq(c, "\n") {
			b.WriteString("# " + l + "\n")
		}
	}
	fmt.Fprintf(&b, "seed: %d\n", f.Seed)
	if f.Duration > 0 {
		fmt.Fprintf(&b, "duration: %s\n", f.Duration)
	}
	if len(f.Axes) > 0 {
		var parts []string
		for _, a := range axes {
			if v, ok := f.Axes[a.name]; ok {
				parts = append(parts, a.name+": "+v)
			}
		}
		fmt.Fprintf(&b, "axes: {%s}\n", strings.Join(parts, ", "))
	}
	if len(f.Steps) == 0 {
		b.WriteString("schedule: []\n")
		return b.String()
	}
	b.WriteString("schedule:\n")
	for _, s := range f.Steps {
		b.WriteString("  - " + stepYAML(s) + "\n")
	}
	return b.String()
}

// stepYAML is one step as a flow mapping: {at: 2.5s, fault: kill, target: count/0}.
func stepYAML(s Step) string {
	a := s.Action
	parts := []string{"at: " + s.At.String(), "fault: " + a.Verb}
	if a.Target != "" {
		key := "target"
		if a.Verb == "scale" {
			key = "op"
		}
		parts = append(parts, key+": "+yamlWord(a.Target))
	}
	keys := make([]string, 0, len(a.Args))
	for k := range a.Args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := a.Args[k]
		switch {
		case k == "groups":
			var gs []string
			for g := range strings.SplitSeq(v, "|") {
				gs = append(gs, "["+strings.Join(strings.Split(g, ","), ", ")+"]")
			}
			v = "[" + strings.Join(gs, ", ") + "]"
		default:
			v = yamlWord(v)
		}
		parts = append(parts, yamlWord(k)+": "+v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./-][A-Za-z0-9_./:#-]*$`)

// yamlWord is s as a YAML scalar of a flow mapping: plain if it reads
// back as itself, else quoted.
func yamlWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// simVerbs are the faults a schedule file takes: the chaos DSL's, with
// the sim's own: crash (the coordinator, resumed resume_after later),
// pause coord (its event loop) and drain (the drain asked early). Each
// with the fields it takes beyond at and fault.
var simVerbs = map[string][]string{
	"kill":      {"target", "resume_after"}, // resume_after: kill coordinator, the sim's crash coord
	"restart":   {"target"},
	"pause":     {"target", "for"},
	"resume":    {"target"},
	"partition": {"target", "shape", "groups", "oneway", "for"},
	"link":      {"target", "latency", "jitter", "bandwidth", "stall", "reset", "for"},
	"store":     {"target", "slow", "fail", "corrupt", "file", "for"},
	"heal":      {"target"},
	"scale":     {"op", "n"},
	"crash":     {"target", "resume_after"},
	"drain":     nil,
	"fork":      nil, // spate sim --fork-at: the fault Config.ForkFile names, or none
}

var (
	simNodeRE     = regexp.MustCompile(`^n([1-9][0-9]*)$`)
	simInstanceRE = regexp.MustCompile(`^([a-z]+)[/#]([0-9]+)$`)
)

// ParseSchedule reads a schedule file. file names it in errors, each one
// line: "FILE:LINE: FIELD: what is wrong". It never panics.
func ParseSchedule(file string, data []byte) (f ScheduleFile, err error) {
	p := &schedParser{file: file, nodes: DefaultConfig().Nodes}
	defer func() {
		if r := recover(); r != nil { // the YAML library is not ours
			err = p.errAt(1, "", "yaml: cannot parse: %v", r)
		}
	}()
	if len(data) > 1<<20 {
		return f, p.errAt(1, "", "file too large (%d bytes, at most 1 MiB)", len(data))
	}
	doc, perr := parser.ParseBytes(data, 0)
	if perr != nil {
		line, msg := 1, perr.Error()
		var ye yaml.Error
		if errors.As(perr, &ye) {
			msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				line = tk.Position.Line
			}
		}
		msg, _, _ = strings.Cut(msg, "\n")
		return f, p.errAt(line, "", "yaml: %s", msg)
	}
	var bodies []ast.Node
	for _, d := range doc.Docs {
		if d != nil && d.Body != nil {
			bodies = append(bodies, d.Body)
		}
	}
	switch len(bodies) {
	case 0:
		return f, p.errAt(1, "", "empty: want seed, duration, axes and schedule")
	case 1:
	default:
		return f, p.errf(bodies[1], "", "more than one YAML document")
	}
	return p.file1(bodies[0])
}

type schedParser struct {
	file  string
	nodes int
}

func (p *schedParser) errAt(line int, field, format string, args ...any) error {
	return &chaos.Error{File: p.file, Line: max(line, 1), Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (p *schedParser) errf(n ast.Node, field, format string, args ...any) error {
	return p.errAt(nodeLine(n), field, format, args...)
}

func nodeLine(n ast.Node) int {
	if mv, ok := n.(*ast.MappingValueNode); ok && mv.Key != nil {
		n = mv.Key
	}
	if n != nil {
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			return tk.Position.Line
		}
	}
	return 0
}

// kv is one key: value of a mapping.
type kv struct {
	key   string
	line  int
	value ast.Node
}

func (p *schedParser) mapping(n ast.Node, path string) ([]kv, error) {
	var pairs []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		pairs = v.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{v}
	default:
		return nil, p.errf(n, path, "want a mapping (key: value), got %s", kind(n))
	}
	var out []kv
	seen := map[string]bool{}
	for _, mv := range pairs {
		if mv == nil || mv.Key == nil {
			continue
		}
		k, ok := mv.Key.(*ast.StringNode)
		if !ok {
			return nil, p.errf(mv, path, "a key must be a plain word")
		}
		key := join(path, k.Value)
		if seen[k.Value] {
			return nil, p.errf(mv, key, "given twice")
		}
		seen[k.Value] = true
		val := mv.Value
		if val == nil {
			val = &ast.NullNode{BaseNode: &ast.BaseNode{}, Token: mv.Key.GetToken()}
		}
		out = append(out, kv{key: k.Value, line: nodeLine(mv), value: val})
	}
	return out, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kind(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode, nil:
		return "nothing"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.IntegerNode, *ast.FloatNode:
		return "a number"
	case *ast.AliasNode, *ast.AnchorNode, *ast.TagNode:
		return "an alias, anchor or tag"
	}
	return "a string"
}

// word is a scalar's text.
func (p *schedParser) word(n ast.Node, path string) (string, error) {
	switch v := n.(type) {
	case *ast.NullNode:
		return "", p.errf(n, path, "missing value")
	case *ast.StringNode:
		if s := strings.TrimSpace(v.Value); s != "" {
			return s, nil
		}
		return "", p.errf(n, path, "empty")
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return strings.TrimSpace(v.GetToken().Value), nil
	}
	return "", p.errf(n, path, "want a single value, got %s", kind(n))
}

func (p *schedParser) duration(n ast.Node, path string, positive bool) (time.Duration, error) {
	s, err := p.word(n, path)
	if err != nil {
		return 0, err
	}
	d, perr := time.ParseDuration(s)
	switch {
	case perr != nil:
		return 0, p.errf(n, path, "%q is not a duration (want e.g. 500ms, 2.5s)", s)
	case d < 0:
		return 0, p.errf(n, path, "%s: must not be negative", s)
	case d == 0 && positive:
		return 0, p.errf(n, path, "must be positive")
	}
	return d, nil
}

func (p *schedParser) file1(root ast.Node) (ScheduleFile, error) {
	var f ScheduleFile
	fields, err := p.mapping(root, "")
	if err != nil {
		return f, err
	}
	haveSeed, haveSchedule := false, false
	for _, kv := range fields {
		switch kv.key {
		case "seed":
			var u uint64
			if in, isInt := kv.value.(*ast.IntegerNode); isInt {
				switch v := in.Value.(type) {
				case int64:
					u = uint64(max(v, 0))
				case uint64:
					u = v
				}
			}
			if u == 0 {
				return f, p.errf(kv.value, "seed", "want a positive whole number, got %s", kind(kv.value))
			}
			f.Seed, haveSeed = u, true
		case "duration":
			d, err := p.duration(kv.value, "duration", true)
			if err != nil {
				return f, err
			}
			if d < MinDuration {
				return f, p.errf(kv.value, "duration", "%v is shorter than %v", d, MinDuration)
			}
			f.Duration = d
		case "axes":
			if f.Axes, err = p.axes(kv.value); err != nil {
				return f, err
			}
		case "schedule":
			if f.Steps, err = p.steps(kv.value); err != nil {
				return f, err
			}
			haveSchedule = true
		default:
			return f, p.errAt(kv.line, kv.key, "unknown field (want seed, duration, axes, schedule)")
		}
	}
	switch {
	case !haveSeed:
		return f, p.errAt(1, "seed", "missing: the seed of the run (its generator, its trace)")
	case !haveSchedule:
		return f, p.errAt(1, "schedule", "missing: list the faults (schedule: [] for none)")
	}
	if f.Steps == nil {
		f.Steps = []Step{}
	}
	return f, nil
}

func (p *schedParser) axes(n ast.Node) (Axes, error) {
	fields, err := p.mapping(n, "axes")
	if err != nil {
		return nil, err
	}
	out := Axes{}
	for _, kv := range fields {
		path := "axes." + kv.key
		i := slices.IndexFunc(axes, func(a axis) bool { return a.name == kv.key })
		if i < 0 {
			return nil, p.errAt(kv.line, path, "unknown axis (want %s)", strings.Join(AxisNames(), ", "))
		}
		v, err := p.word(kv.value, path)
		if err != nil {
			return nil, err
		}
		if v == "true" || v == "false" { // autoscale: on|off, which YAML 1.1 reads as booleans
			v = map[string]string{"true": "on", "false": "off"}[v]
		}
		if !slices.Contains(axes[i].values, v) {
			return nil, p.errf(kv.value, path, "%q is not one of %s", v, strings.Join(axes[i].values, ", "))
		}
		out[kv.key] = v
	}
	return out, nil
}

func (p *schedParser) steps(n ast.Node) ([]Step, error) {
	if _, null := n.(*ast.NullNode); null {
		return nil, nil
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return nil, p.errf(n, "schedule", "want a list of steps, got %s", kind(n))
	}
	var out []Step
	for i, it := range seq.Values {
		path := fmt.Sprintf("schedule[%d]", i)
		s, err := p.step(it, path)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && s.At < out[len(out)-1].At {
			return nil, p.errf(it, path+".at", "%v is before the step above it (%v): list the steps in time order", s.At, out[len(out)-1].At)
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *schedParser) step(n ast.Node, path string) (Step, error) {
	var s Step
	fields, err := p.mapping(n, path)
	if err != nil {
		return s, err
	}
	by := map[string]kv{}
	for _, f := range fields {
		by[f.key] = f
	}
	at, ok := by["at"]
	if !ok {
		return s, p.errf(n, path+".at", "missing: when, after the job started (e.g. at: 2.5s)")
	}
	if s.At, err = p.duration(at.value, path+".at", false); err != nil {
		return s, err
	}
	vf, ok := by["fault"]
	if !ok {
		return s, p.errf(n, path+".fault", "missing: which fault (%s)", strings.Join(sortedVerbs(), ", "))
	}
	verb, err := p.word(vf.value, path+".fault")
	if err != nil {
		return s, err
	}
	allowed, ok := simVerbs[verb]
	if !ok {
		return s, p.errf(vf.value, path+".fault", "unknown fault %q (want %s)", verb, strings.Join(sortedVerbs(), ", "))
	}
	a := control.Action{Verb: verb, Args: map[string]string{}}
	for _, f := range fields {
		fp := path + "." + f.key
		if f.key == "at" || f.key == "fault" {
			continue
		}
		if !slices.Contains(allowed, f.key) {
			takes := "at, fault"
			if len(allowed) > 0 {
				takes += ", " + strings.Join(allowed, ", ")
			}
			return s, p.errAt(f.line, fp, "unknown field for %s (it takes %s)", verb, takes)
		}
		if err := p.arg(&a, f, fp); err != nil {
			return s, err
		}
	}
	if a, err = p.check(a, n, path); err != nil {
		return s, err
	}
	if len(a.Args) == 0 {
		a.Args = nil
	}
	s.Action = a
	return s, nil
}

func sortedVerbs() []string {
	out := make([]string, 0, len(simVerbs))
	for v := range simVerbs {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// arg reads one field of a step into a.
func (p *schedParser) arg(a *control.Action, f kv, path string) error {
	switch f.key {
	case "target":
		t, err := p.word(f.value, path)
		if err != nil {
			return err
		}
		if t == "coord" || t == "coordinator" {
			if a.Verb != "pause" && a.Verb != "crash" && a.Verb != "kill" {
				return p.errf(f.value, path, "%q: only pause, crash and kill (with resume_after) take the coordinator", t)
			}
			a.Target = "coord"
			return nil
		}
		if a.Verb == "crash" {
			return p.errf(f.value, path, "%q: crash takes only the coordinator (target: coord)", t)
		}
		if err := p.target(t, f.value, path); err != nil {
			return err
		}
		a.Target = t
	case "op":
		op, err := p.word(f.value, path)
		if err != nil {
			return err
		}
		if !slices.Contains(keyedOps, op) {
			return p.errf(f.value, path, "%q: only count and rollup scale", op)
		}
		a.Target = op
	case "n":
		var v int64
		if in, ok := f.value.(*ast.IntegerNode); ok {
			switch x := in.Value.(type) {
			case int64:
				v = x
			case uint64:
				v = int64(min(x, 1<<20))
			}
		}
		if v < 1 || v > 128 {
			return p.errf(f.value, path, "want a whole number of instances, 1 to 128")
		}
		a.Args["n"] = strconv.FormatInt(v, 10)
	case "for", "latency", "jitter", "slow", "resume_after":
		if _, err := p.duration(f.value, path, true); err != nil {
			return err
		}
		s, _ := p.word(f.value, path)
		a.Args[f.key] = s
	case "bandwidth":
		s, err := p.word(f.value, path)
		if err != nil {
			return err
		}
		if _, err := chaos.ParseBandwidth(s); err != nil {
			return p.errf(f.value, path, "%v", err)
		}
		a.Args[f.key] = s
	case "shape":
		s, err := p.word(f.value, path)
		if err != nil {
			return err
		}
		if s != "one" && s != "majority" && s != "bridge" {
			return p.errf(f.value, path, "unknown shape %q (want one, majority or bridge, or give groups:)", s)
		}
		a.Args[f.key] = s
	case "file":
		s, err := p.word(f.value, path)
		if err != nil {
			return err
		}
		if !slices.Contains(chaos.DamageFiles, s) {
			return p.errf(f.value, path, "unknown file %q (want %s)", s, strings.Join(chaos.DamageFiles, ", "))
		}
		a.Args[f.key] = s
	case "groups":
		g, err := p.groups(f.value, path)
		if err != nil {
			return err
		}
		a.Args[f.key] = g
	case "oneway", "stall", "reset", "fail", "corrupt":
		b, ok := f.value.(*ast.BoolNode)
		if !ok {
			return p.errf(f.value, path, "want true or false, got %s", kind(f.value))
		}
		if b.Value {
			a.Args[f.key] = "true"
		}
	}
	return nil
}

// target checks a target against the sim's cluster and job.
func (p *schedParser) target(t string, at ast.Node, path string) error {
	switch t {
	case "one", "minority", "majority", "all":
		return nil
	}
	if m := simNodeRE.FindStringSubmatch(t); m != nil {
		if k, err := strconv.Atoi(m[1]); err != nil || k > p.nodes {
			return p.errf(at, path, "unknown node %q (the cluster has n1..n%d)", t, p.nodes)
		}
		return nil
	}
	if slices.Contains(jobOps, t) {
		return nil
	}
	if m := simInstanceRE.FindStringSubmatch(t); m != nil && slices.Contains(jobOps, m[1]) {
		if k, err := strconv.Atoi(m[2]); err != nil || k >= 128 {
			return p.errf(at, path, "unknown instance %q", t)
		}
		return nil
	}
	return p.errf(at, path, "unknown target %q (want n1..n%d, one, minority, majority, all, an operator (%s) or an instance like count/1)", t, p.nodes, strings.Join(jobOps, ", "))
}

// groups reads [[n1, n2], [n3, n4]] as "n1,n2|n3,n4".
func (p *schedParser) groups(n ast.Node, path string) (string, error) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok || len(seq.Values) < 2 {
		return "", p.errf(n, path, "want at least two groups of nodes, like [[n1, n2], [n3, n4]]")
	}
	seen := map[string]bool{}
	var gs []string
	for i, g := range seq.Values {
		gp := fmt.Sprintf("%s[%d]", path, i)
		names, ok := g.(*ast.SequenceNode)
		if !ok || len(names.Values) == 0 {
			return "", p.errf(g, gp, "want a list of nodes, like [n1, n2]")
		}
		var list []string
		for _, nn := range names.Values {
			s, err := p.word(nn, gp)
			if err != nil {
				return "", err
			}
			if p.target(s, nn, gp) != nil || !simNodeRE.MatchString(s) {
				return "", p.errf(nn, gp, "%q is not a node of the cluster (n1..n%d)", s, p.nodes)
			}
			if seen[s] {
				return "", p.errf(nn, gp, "%s is in two groups", s)
			}
			seen[s] = true
			list = append(list, s)
		}
		gs = append(gs, strings.Join(list, ","))
	}
	return strings.Join(gs, "|"), nil
}

// check checks what a step needs as a whole; a kill of the coordinator
// with resume_after (the chaos DSL's spelling) becomes the sim's crash.
func (p *schedParser) check(a control.Action, n ast.Node, path string) (control.Action, error) {
	has := func(k string) bool { _, ok := a.Args[k]; return ok }
	line := nodeLine(n)
	if a.Verb == "kill" && a.Target == "coord" {
		if !has("resume_after") {
			return a, p.errAt(line, path+".resume_after", "missing: the sim resumes a killed coordinator (resume_after: D)")
		}
		a.Verb = "crash"
	}
	switch a.Verb {
	case "kill", "restart", "resume", "link", "pause":
		if a.Target == "" {
			return a, p.errAt(line, path+".target", "missing: %s needs a target", a.Verb)
		}
		if has("resume_after") {
			return a, p.errAt(line, path+".resume_after", "only the coordinator is resumed (target: coord)")
		}
	case "crash":
		if a.Target == "" {
			a.Target = "coord"
		}
		if !has("resume_after") {
			return a, p.errAt(line, path+".resume_after", "missing: crash needs resume_after: D")
		}
	case "partition":
		if has("shape") && has("groups") {
			return a, p.errAt(line, path+".groups", "give shape: or groups:, not both")
		}
		if has("groups") && a.Target != "" {
			return a, p.errAt(line, path+".target", "groups: already names the nodes")
		}
		if !has("shape") && !has("groups") && a.Target == "" {
			return a, p.errAt(line, path+".target", "missing: partition needs a target (isolates it), shape: or groups:")
		}
	case "scale":
		if a.Target == "" {
			return a, p.errAt(line, path+".op", "missing: scale needs op: (count or rollup)")
		}
		if !has("n") {
			return a, p.errAt(line, path+".n", "missing: scale needs n: (the new number of instances)")
		}
	case "store":
		k := 0
		for _, x := range []string{"slow", "fail", "corrupt"} {
			if has(x) {
				k++
			}
		}
		if has("file") && !has("corrupt") {
			k++
		}
		if k != 1 {
			return a, p.errAt(line, path, "store needs exactly one of slow: D, fail: true, corrupt: true (or file:)")
		}
	}
	if a.Verb == "link" && !has("latency") && !has("jitter") && !has("bandwidth") && !has("stall") && !has("reset") {
		return a, p.errAt(line, path, "link needs latency:, jitter:, bandwidth:, stall: true or reset: true")
	}
	if a.Verb == "pause" && a.Target == "coord" && !has("for") {
		return a, p.errAt(line, path+".for", "missing: pause coord needs for: D")
	}
	return a, nil
}
