package traces

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// write writes data to a file in a temp dir and returns its path.
func write(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gzipped(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bzipped compresses with the bzip2 command (Go cannot write bzip2); it
// skips the test if there is none.
func bzipped(t testing.TB, data []byte) []byte {
	t.Helper()
	bz, err := exec.LookPath("bzip2")
	if err != nil {
		t.Skip("no bzip2 command to make test data")
	}
	cmd := exec.Command(bz, "-c")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bzip2: %v", err)
	}
	return out
}

// wantLineErr checks that err is a *LineError whose message starts with
// "path:line: " and contains each of want.
func wantLineErr(t *testing.T, err error, path string, line int, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s:%d: %v", path, line, want)
	}
	var le *LineError
	if !errors.As(err, &le) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("error %q (%T) is not a *LineError", err, err)
	}
	prefix := path + ":" + strconv.Itoa(line) + ": "
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("error %q does not start with %q", err, prefix)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not contain %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q spans lines", err)
	}
}

// sharedTraces returns the directory of the real traces or skips.
func sharedTraces(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "traces", "load")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no shared traces at %s", dir)
	}
	return dir
}
