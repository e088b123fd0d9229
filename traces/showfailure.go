package traces

import (
	"fmt"
	"io"
	"strings"
)

// failureKind says whether the file at path is a failure trace, by its
// header: "lanl" (the LANL failure CSV: Prob Started, Prob Fixed and Down
// Time columns) or "fta" (a Failure Trace Archive event_trace table:
// event_type and event_start_time), "" otherwise. These are the failure
// sources of `spate up --failures`, not load sources, and Show says so
// rather than guess a time column among their fields.
func failureKind(path string) (kind string, rows int, err error) {
	in, err := openInput(path, 0)
	if err != nil {
		return "", 0, err
	}
	defer in.Close()
	sc := &lineScanner{r: in.r}
	lay, err := readHeader(sc, in, 0)
	if err != nil {
		return "", 0, nil // no header: not a failure trace; the guess says why
	}
	h := strings.ToLower(strings.Join(lay.header, " "))
	switch {
	case strings.Contains(h, "prob started") && strings.Contains(h, "down time"):
		kind = "lanl"
	case strings.Contains(h, "event_type") && strings.Contains(h, "event_start_time"):
		kind = "fta"
	default:
		return "", 0, nil
	}
	for {
		line, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", 0, lineReadErr(in, sc, err)
		}
		if !isBlank(line) {
			rows++
		}
	}
	return kind, rows, nil
}

// showFailure prints a failure trace's summary: what it is and the
// --failures string that uses it.
func showFailure(w io.Writer, path, kind string, rows int) error {
	name := map[string]string{
		"lanl": "failure trace: LANL failure data (one row an outage of a node)",
		"fta":  "failure trace: Failure Trace Archive event_trace (one row a node's availability event)",
	}[kind]
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%s\n", kind, path)
	fmt.Fprintf(&b, "  %-8s %s\n", "kind", name)
	fmt.Fprintf(&b, "  %-8s %s\n", "file", path)
	fmt.Fprintf(&b, "  %-8s %s\n", "rows", fmtInt(uint64(rows)))
	fmt.Fprintf(&b, "  %-8s not a load source: the interval tuner's failure prior, fitted per node\n", "use")
	fmt.Fprintf(&b, "  %-8s --failures %s:%s\n", "paste", kind, path)
	fmt.Fprintf(&b, "  %-8s spate up --interval auto --failures %s:%s\n", "e.g.", kind, path)
	_, err := io.WriteString(w, b.String())
	return err
}
