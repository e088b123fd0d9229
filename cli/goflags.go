package cli

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Some engines (coord.ParseUp, the benchmarks, tuner sim) parse their own
// arguments with the standard flag package, and their flags belong to
// their owners. The command line does not copy those definitions: it reads
// them from the engine's own -h listing (flag.PrintDefaults), so that its
// help, its one-line errors and its completion list exactly the flags the
// engine takes, whatever its owner adds later. The engine still parses the
// arguments itself, so their meaning is unchanged.

// goFlag is one flag of an engine, as its -h listing shows it.
type goFlag struct {
	Name    string
	Type    string // bool, int, uint, float, duration, string or value
	Usage   string
	Default string
}

// goTypes are the type names flag.PrintDefaults writes (flag.UnquoteUsage).
var goTypes = map[string]bool{"int": true, "uint": true, "float": true, "duration": true, "string": true, "value": true}

// readGoFlags calls help, which must make the engine print its -h listing
// to w, and reads the flags in it.
func readGoFlags(help func(w io.Writer)) []goFlag {
	var b bytes.Buffer
	help(&b)
	return parseGoDefaults(b.String())
}

// parseGoDefaults reads the output of flag.PrintDefaults; other lines are
// ignored. A usage with a backquoted word (`spate scale`) has lost its
// backquotes and lent the word to the type column: the word goes back into
// the usage, in single quotes, and the type becomes "value", or "int" if
// the default is a whole number (such a flag is never a bool: flag shows
// bools without a type, unless backquoted, which none of ours is).
func parseGoDefaults(text string) []goFlag {
	var out []goFlag
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			head, usage, short := strings.Cut(line[3:], "\t")
			name, typ, _ := strings.Cut(head, " ")
			f := goFlag{Name: name, Type: typ}
			if short {
				f.Usage = usage
			}
			out = append(out, f)
		case strings.HasPrefix(line, "    \t") && len(out) > 0:
			f := &out[len(out)-1]
			if f.Usage != "" {
				f.Usage += " "
			}
			f.Usage += line[5:]
		}
	}
	for i := range out {
		f := &out[i]
		if i := strings.LastIndex(f.Usage, " (default "); i >= 0 && strings.HasSuffix(f.Usage, ")") {
			d := f.Usage[i+len(" (default ") : len(f.Usage)-1]
			if u, err := strconv.Unquote(d); err == nil {
				d = u
			}
			f.Default, f.Usage = d, f.Usage[:i]
		}
		switch {
		case f.Type == "":
			f.Type = "bool"
			if f.Default == "" {
				f.Default = "false"
			}
		case !goTypes[f.Type]:
			f.Usage = strings.Replace(f.Usage, f.Type, "'"+f.Type+"'", 1)
			f.Type = "value"
			if _, err := strconv.ParseInt(f.Default, 0, 64); err == nil {
				f.Type = "int" // the type went to the placeholder; a number's default says it
			}
		}
	}
	return out
}

// goValue is a goFlag as a pflag.Value: it checks a value as the flag
// package would, and keeps nothing else (the engine parses for real).
type goValue struct {
	typ string
	val string
}

func (v *goValue) String() string { return v.val }

// Type is the name help shows: pflag hides "bool".
func (v *goValue) Type() string {
	if v.typ == "value" {
		return "string"
	}
	return v.typ
}

func (v *goValue) Set(s string) error {
	var err error
	switch v.typ {
	case "bool":
		_, err = strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
	case "int":
		if _, err = strconv.ParseInt(s, 0, 64); err != nil {
			return fmt.Errorf("want a whole number")
		}
	case "uint":
		if _, err = strconv.ParseUint(s, 0, 64); err != nil {
			return fmt.Errorf("want a whole number, not negative")
		}
	case "float":
		if _, err = strconv.ParseFloat(s, 64); err != nil {
			return fmt.Errorf("want a number")
		}
	case "duration":
		if _, err = time.ParseDuration(s); err != nil {
			return fmt.Errorf("want a duration like 500ms, 10s or 2m")
		}
	}
	v.val = s
	return nil
}

// addGoFlags defines fl on fs for help, checking and completion.
func addGoFlags(fs *pflag.FlagSet, fl []goFlag) {
	for _, f := range fl {
		pf := fs.VarPF(&goValue{typ: f.Type, val: f.Default}, f.Name, "", f.Usage)
		pf.DefValue = f.Default
		if f.Type == "bool" {
			pf.NoOptDefVal = "true"
		}
	}
}
