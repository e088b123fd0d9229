package chaos_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"spate/chaos"
	"spate/coord"
)

// TestExamplesClusterFlags: each example's cluster: block is a valid
// command line for `spate up`.
func TestExamplesClusterFlags(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.yaml")
	more, _ := filepath.Glob("../examples/*/*.yaml")
	files = append(files, more...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := chaos.Parse(f, data)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := coord.ParseUp(append(sc.Cluster, "--headless"), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if cfg.Duration != sc.Duration || cfg.Nodes != sc.Nodes {
			t.Errorf("%s: duration %v nodes %d, scenario says %v %d", f, cfg.Duration, cfg.Nodes, sc.Duration, sc.Nodes)
		}
	}
}
