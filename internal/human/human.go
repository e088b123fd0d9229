// Package human formats numbers for people: every place a person reads a
// rate, a count, a duration, a size or an event time (the dashboard, the
// headless lines, event texts, reports, the tour) goes through it, so that
// the same quantity reads the same everywhere.
//
// The rules: counts and rates to three significant digits with a k, M or G
// suffix (11.8k, 11.8k/s), never an exponent; durations in the unit that
// fits (157 µs, 9.0 ms, 2.1 s, 3m05s); sizes in binary units (1.5 MiB);
// a noun after a count in the singular for one (1 instance, 2 instances).
package human

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Count is v to three significant digits with a k, M or G suffix: 950,
// 11.8k, 2.35M. Whole numbers below a thousand print whole.
func Count(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	for _, u := range []struct {
		f float64
		s string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if r := sig3(v / u.f); r >= 1 && v >= u.f*0.9995 {
			return sign + trim(r) + u.s
		}
	}
	if v == math.Trunc(v) {
		return sign + fmt.Sprintf("%.0f", v)
	}
	return sign + trim(sig3(v))
}

// Rate is Count per second: 11.8k/s.
func Rate(perSecond float64) string { return Count(perSecond) + "/s" }

// Duration is d in the unit that fits, to two or three significant
// digits: 850 ns, 157 µs, 9.0 ms, 2.1 s, 3m05s, 2h10m; nothing is 0 s.
func Duration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d == 0:
		return "0 s"
	case d < time.Microsecond:
		s = fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		s = unit(float64(d)/float64(time.Microsecond), "µs")
	case d < time.Second:
		s = unit(float64(d)/float64(time.Millisecond), "ms")
	case d < time.Minute:
		s = unit(d.Seconds(), "s")
	case d < time.Hour:
		d = d.Round(time.Second)
		s = fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		d = d.Round(time.Minute)
		s = fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	if neg {
		return "-" + s
	}
	return s
}

// Seconds is Duration of a number of seconds.
func Seconds(s float64) string { return Duration(time.Duration(s * float64(time.Second))) }

// unit prints v with one decimal below 10 (below 60 for seconds) and
// none above: 9.0 ms, 157 µs, 12.3 s.
func unit(v float64, u string) string {
	if v < 10 || u == "s" {
		return fmt.Sprintf("%.1f %s", v, u)
	}
	return fmt.Sprintf("%.0f %s", v, u)
}

// Bytes is n bytes in B, KiB, MiB or GiB, to a tenth: 1.5 MiB.
func Bytes(n float64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", n/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", n)
}

// Plural is n and noun, the noun in the plural unless n is one: "1
// instance", "2 instances". A noun ending in s, x, ch or sh takes es; one
// ending in a consonant and y takes ies.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %s", n, plural(noun))
}

// PluralCount is Plural with the count as Count prints it: "12.3k records".
func PluralCount(n float64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Count(n) + " " + plural(noun)
}

func plural(noun string) string {
	switch {
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	case len(noun) > 1 && strings.HasSuffix(noun, "y") && !strings.ContainsAny(noun[len(noun)-2:len(noun)-1], "aeiou"):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

// epochFloor is where an event time in ms stops being a job's own clock
// (a generator starts at zero) and becomes a trace's wall-clock date: a
// year after 1970.
const epochFloor = int64(365 * 24 * time.Hour / time.Millisecond)

// EventTime is an event time in ms: a trace's date and time when it is
// one (2006-01-02 15:04:05 UTC), else the job's own seconds (12.3 s).
func EventTime(ms int64) string {
	if ms >= epochFloor {
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05")
	}
	return Seconds(float64(ms) / 1000)
}

// sig3 rounds v to three significant digits.
func sig3(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(v)))
	return math.Round(v*p) / p
}

// trim prints v without an exponent or trailing zeros.
func trim(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
