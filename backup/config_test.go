package backup

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		err  string
	}{
		{in: "1048576", want: 1 << 20},
		{in: "64MiB", want: 64 << 20},
		{in: "64 mb", want: 64 << 20},
		{in: "512KiB", want: 512 << 10},
		{in: "2G", want: 2 << 30},
		{in: "10B", want: 10},
		{in: "", err: "want a size"},
		{in: "MiB", err: "want a size"},
		{in: "-5MiB", err: "want a size"},
		{in: "3 parsecs", err: `unknown unit "parsecs"`},
		{in: "1.5MiB", err: "want a size"},
		{in: "9999999999999GiB", err: "too large"},
	} {
		got, err := ParseSize(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseSize(%q): error %v, want one containing %q", tt.in, err, tt.err)
		}
	}
}
