package spacetime

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTextNamesEveryLaneFitsItsWidthAndMarksTheKill(t *testing.T) {
	for _, name := range runs {
		l, _ := oneLoss(t, name)
		for _, width := range []int{40, 60, 80, 120, 200} {
			text := Text(l, width)
			lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
			for i, line := range lines {
				if n := utf8.RuneCountInString(line); n > width {
					t.Errorf("%s at %d: line %d is %d wide: %q", name, width, i+1, n, line)
				}
			}
			rows := map[string]string{} // instance -> its lane's row
			for _, line := range lines {
				for _, ln := range l.Lanes {
					if strings.HasPrefix(line, ln.Instance+" ") {
						rows[ln.Instance] = line
					}
				}
			}
			for _, ln := range l.Lanes {
				row, ok := rows[ln.Instance]
				if !ok {
					t.Errorf("%s at %d: no lane named %s in\n%s", name, width, ln.Instance, text)
					continue
				}
				if got := strings.ContainsRune(row, markKill); got != ln.Lost {
					t.Errorf("%s at %d: %s lost %v, kill mark %v: %q", name, width, ln.Instance, ln.Lost, got, row)
				}
				if !strings.ContainsRune(row, markRestore) && (ln.Lost || l.Global) {
					t.Errorf("%s at %d: %s restored, no restore mark: %q", name, width, ln.Instance, row)
				}
			}
			for _, rp := range l.Replays {
				if width >= 60 && !strings.Contains(text, rp.From+" → "+rp.To+": "+count(rp.Records)+" records") {
					t.Errorf("%s at %d: no line for the replay %+v", name, width, rp)
				}
				if width >= 80 && !strings.ContainsRune(rows[rp.To], '▼') {
					t.Errorf("%s at %d: no arrow head on %s: %q", name, width, rp.To, rows[rp.To])
				}
			}
		}
	}
}

// TestTextPutsTheReplayCountsBesideTheirArrows: at 80 columns the two
// replays of the spate run, two milliseconds apart, get an arrow each in
// neighbouring columns and their counts both fit between the lanes.
func TestTextPutsTheReplayCountsBesideTheirArrows(t *testing.T) {
	l, _ := oneLoss(t, "spate.jsonl")
	text := Text(l, 80)
	var grid []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "▼") {
			break
		}
		grid = append(grid, line)
	}
	body := strings.Join(grid, "\n")
	for _, rp := range l.Replays {
		if !strings.Contains(body, count(rp.Records)) {
			t.Errorf("count %d of %s is not in the diagram:\n%s", rp.Records, rp.From, body)
		}
	}
	if strings.Count(body, "▼") != len(l.Replays) {
		t.Errorf("%d arrow heads for %d replays:\n%s", strings.Count(body, "▼"), len(l.Replays), body)
	}
}

func TestTextIsTheSameForTheSameLoss(t *testing.T) {
	l, _ := oneLoss(t, "spate.jsonl")
	if a, b := Text(l, 80), Text(l, 80); a != b {
		t.Errorf("two texts of one loss differ:\n%s\n%s", a, b)
	}
}

var update = flag.Bool("update", false, "rewrite the golden texts in testdata")

// TestTextGoldens keeps the text of each recorded loss at 80 columns in
// testdata/NAME-80.txt, to read and to review (go test -update rewrites
// them).
func TestTextGoldens(t *testing.T) {
	for _, name := range runs {
		l, _ := oneLoss(t, name)
		got := Text(l, 80)
		file := filepath.Join("testdata", strings.TrimSuffix(name, ".jsonl")+"-80.txt")
		if *update {
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("%s: the text differs from %s (go test -update rewrites it):\n%s", name, file, got)
		}
	}
}

// TestTextFitsAnyWidth: from one column to two hundred, no line of any
// recorded loss is wider than asked, and nothing panics.
func TestTextFitsAnyWidth(t *testing.T) {
	for _, name := range runs {
		l, _ := oneLoss(t, name)
		for width := 1; width <= 200; width++ {
			for i, line := range strings.Split(strings.TrimSuffix(Text(l, width), "\n"), "\n") {
				if n := utf8.RuneCountInString(line); n > width {
					t.Fatalf("%s at %d: line %d is %d wide: %q", name, width, i+1, n, line)
				}
			}
		}
	}
}
