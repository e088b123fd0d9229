// Package weedtest starts the S3-compatible server the tests of the S3
// store run against: SeaweedFS's weed, once per test binary, on ports
// from a free-port probe, with its data under a temporary directory, when
// weed is on PATH (docs/deployment.md, "The S3 store's tests", says how to install it).
// Without it, Start skips the test with a message saying so.
package weedtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The credentials the server accepts.
const (
	Key    = "spate-test-key"
	Secret = "spate-test-secret"
)

// Getenv is an environment that holds the server's credentials, for
// stores.S3Options.Getenv.
func Getenv(k string) string {
	switch k {
	case "AWS_ACCESS_KEY_ID":
		return Key
	case "AWS_SECRET_ACCESS_KEY":
		return Secret
	}
	return ""
}

var weed struct {
	once     sync.Once
	endpoint string
	cmd      *exec.Cmd
	dir      string
	exited   chan error // the server's Wait
	err      error
	skip     string
}

// Main runs the tests and stops the server, if one was started; it
// returns the exit code (TestMain: os.Exit(weedtest.Main(m))).
func Main(m *testing.M) int {
	code := m.Run()
	if weed.exited != nil {
		weed.cmd.Process.Kill()
		<-weed.exited
	}
	if weed.dir != "" && weed.err == nil {
		os.RemoveAll(weed.dir)
	}
	return code
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// Start returns the server's endpoint (HOST:PORT), starting it the first
// time; it skips t when weed is not on PATH and fails t when it is but
// does not start.
func Start(t testing.TB) string {
	t.Helper()
	weed.once.Do(start)
	if weed.skip != "" {
		t.Skip(weed.skip)
	}
	if weed.err != nil {
		t.Fatal(weed.err)
	}
	return weed.endpoint
}

func start() {
	bin, err := exec.LookPath("weed")
	if err != nil {
		weed.skip = "weed (SeaweedFS) is not on PATH: the S3 store is tested against a real server only; docs/deployment.md, \"The S3 store's tests\", says how to install it"
		return
	}
	fail := func(err error) { weed.err = fmt.Errorf("weed: %w", err) }
	if weed.dir, err = os.MkdirTemp("", "spate-weed-"); err != nil {
		fail(err)
		return
	}
	cfg := filepath.Join(weed.dir, "s3.json")
	ident := fmt.Sprintf(`{"identities":[{"name":"spate","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","Write","List","Tagging"]}]}`, Key, Secret)
	if err := os.WriteFile(cfg, []byte(ident), 0o600); err != nil {
		fail(err)
		return
	}
	data := filepath.Join(weed.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		fail(err)
		return
	}
	ports := map[string]string{}
	for _, f := range []string{"master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc", "s3.port", "s3.port.grpc"} {
		if ports[f], err = freePort(); err != nil {
			fail(err)
			return
		}
	}
	args := []string{"mini", "-dir=" + data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false", "-master.telemetry=false",
		"-s3.config=" + cfg}
	for f, p := range ports {
		args = append(args, "-"+f+"="+p)
	}
	logf, err := os.Create(filepath.Join(weed.dir, "weed.log"))
	if err != nil {
		fail(err)
		return
	}
	weed.cmd = exec.Command(bin, args...)
	weed.cmd.Stdout, weed.cmd.Stderr = logf, logf
	if err := weed.cmd.Start(); err != nil {
		fail(err)
		return
	}
	weed.endpoint = "127.0.0.1:" + ports["s3.port"]
	exited := make(chan error, 1)
	weed.exited = exited
	go func() { err := weed.cmd.Wait(); exited <- err; close(exited) }()
	// Poll until the gateway stores an object (a fresh server takes
	// seconds to elect its master and find its volume server).
	cl, err := minio.New(weed.endpoint, &minio.Options{Creds: credentials.NewStaticV4(Key, Secret, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		fail(err)
		return
	}
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		if last = probe(cl); last == nil {
			return
		}
		select {
		case err := <-exited:
			fail(fmt.Errorf("exited: %v (log: %s)", err, logf.Name()))
			return
		case <-time.After(250 * time.Millisecond): // polling a starting server, not synchronising with it
		}
	}
	fail(fmt.Errorf("no answer at %s within 2 minutes; last: %v (log: %s)", weed.endpoint, last, logf.Name()))
}

func probe(cl *minio.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, err := cl.BucketExists(ctx, "spate-probe")
	if err == nil && !ok {
		err = cl.MakeBucket(ctx, "spate-probe", minio.MakeBucketOptions{})
	}
	if err == nil {
		_, err = cl.PutObject(ctx, "spate-probe", "ready", strings.NewReader("x"), 1, minio.PutObjectOptions{})
	}
	return err
}
