package stores

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"spate/state"
	"spate/state/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	weed.stop()
	os.Exit(code)
}

// The S3-compatible server of the tests: SeaweedFS's weed, started once
// per test binary when it is on PATH (README.md says how to install it).
var weed weedServer

type weedServer struct {
	once     sync.Once
	endpoint string
	cmd      *exec.Cmd
	dir      string
	err      error
	skip     string
}

const weedKey, weedSecret = "spate-test-key", "spate-test-secret"

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// weedEnv is the environment that holds the test server's credentials.
func weedEnv(k string) string {
	switch k {
	case "AWS_ACCESS_KEY_ID":
		return weedKey
	case "AWS_SECRET_ACCESS_KEY":
		return weedSecret
	}
	return ""
}

// startWeed returns the endpoint of the test server, starting it the
// first time, or skips the test.
func startWeed(t *testing.T) string {
	t.Helper()
	weed.once.Do(func() {
		bin, err := exec.LookPath("weed")
		if err != nil {
			weed.skip = "weed (SeaweedFS) is not on PATH: the S3 store is tested against a real server only; README.md, \"The S3 store\", says how to install it"
			return
		}
		if weed.dir, err = os.MkdirTemp("", "spate-weed-"); err != nil {
			weed.err = err
			return
		}
		cfg := filepath.Join(weed.dir, "s3.json")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"identities":[{"name":"spate","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","Write","List","Tagging"]}]}`, weedKey, weedSecret)), 0o600); err != nil {
			weed.err = err
			return
		}
		p := func() string { return strconv.Itoa(freePort(t)) }
		s3 := p()
		args := []string{"mini", "-dir=" + filepath.Join(weed.dir, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
			"-master.port=" + p(), "-master.port.grpc=" + p(), "-volume.port=" + p(), "-volume.port.grpc=" + p(),
			"-filer.port=" + p(), "-filer.port.grpc=" + p(), "-s3.port=" + s3, "-s3.port.grpc=" + p(),
			"-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false", "-master.telemetry=false",
			"-s3.config=" + cfg}
		os.MkdirAll(filepath.Join(weed.dir, "data"), 0o755)
		log, err := os.Create(filepath.Join(weed.dir, "weed.log"))
		if err != nil {
			weed.err = err
			return
		}
		weed.cmd = exec.Command(bin, args...)
		weed.cmd.Stdout, weed.cmd.Stderr = log, log
		if err := weed.cmd.Start(); err != nil {
			weed.err = fmt.Errorf("start weed: %w", err)
			return
		}
		weed.endpoint = "127.0.0.1:" + s3
		// Poll until the S3 gateway answers a signed request (a fresh
		// server takes seconds to elect its master and find its volume).
		exited := make(chan error, 1)
		go func() { exited <- weed.cmd.Wait() }()
		deadline := time.Now().Add(90 * time.Second)
		var last error
		for time.Now().Before(deadline) {
			sp := Spec{Kind: S3, Bucket: "probe", Endpoint: weed.endpoint}
			var s *ObjectStore
			if s, last = OpenS3(sp, "probe", S3Options{Getenv: weedEnv, Timeout: 5 * time.Second}); last == nil {
				if last = s.Put("ready", []byte("x")); last == nil {
					return
				}
			}
			select {
			case err := <-exited:
				weed.err = fmt.Errorf("weed exited: %v (log in %s)", err, log.Name())
				return
			case <-time.After(200 * time.Millisecond): // polling a starting server, not synchronising with it
			}
		}
		weed.err = fmt.Errorf("weed did not answer at %s within 90s; last: %v (log in %s)", weed.endpoint, last, log.Name())
	})
	if weed.skip != "" {
		t.Skip(weed.skip)
	}
	if weed.err != nil {
		t.Fatal(weed.err)
	}
	return weed.endpoint
}

func (w *weedServer) stop() {
	if w.cmd != nil && w.cmd.Process != nil {
		w.cmd.Process.Kill()
		w.cmd.Wait()
	}
	if w.dir != "" && w.err == nil {
		os.RemoveAll(w.dir)
	}
}

var runSeq atomic.Int64

func TestS3StoreContract(t *testing.T) {
	ep := startWeed(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		sp := Spec{Kind: S3, Bucket: "spate-test", Prefix: "contract", Endpoint: ep}
		sub := fmt.Sprintf("run%d/checkpoints", runSeq.Add(1))
		open := func() state.Store {
			s, err := OpenS3(sp, sub, S3Options{Getenv: weedEnv})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		s := open().(*ObjectStore)
		return storetest.Harness{Store: s, Verifies: true, Reopen: open,
			Corrupt: func(name string) error {
				b, err := s.Get(name)
				if err != nil {
					return err
				}
				info, err := s.cl.StatObject(t.Context(), s.bucket, s.prefix+name, minio.StatObjectOptions{})
				if err != nil {
					return err
				}
				crc, err := crcOf(info)
				if err != nil {
					return err
				}
				b[len(b)/2] ^= 0x10 // same length, same recorded CRC: a bad disk
				return s.putRaw(name, b, fmt.Sprintf("%08x", crc))
			}}
	})
}

func TestS3StoreRefusesObjectsWithoutChecksum(t *testing.T) {
	ep := startWeed(t)
	s, err := OpenS3(Spec{Kind: S3, Bucket: "spate-test", Endpoint: ep}, fmt.Sprintf("run%d/x", runSeq.Add(1)), S3Options{Getenv: weedEnv})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.putRaw("foreign", []byte("not ours"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("foreign"); !errors.Is(err, state.ErrCorrupt) {
		t.Fatalf("Get of an object without a checksum: %v, want ErrCorrupt", err)
	}
	if err := s.putRaw("bad-crc", []byte("x"), "not-hex"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("bad-crc"); !errors.Is(err, state.ErrCorrupt) {
		t.Fatalf("Get of an object with a malformed checksum: %v, want ErrCorrupt", err)
	}
	// Run prefixes keep runs apart.
	other, err := OpenS3(Spec{Kind: S3, Bucket: "spate-test", Endpoint: ep}, fmt.Sprintf("run%d/x", runSeq.Add(1)), S3Options{Getenv: weedEnv})
	if err != nil {
		t.Fatal(err)
	}
	if names, err := other.List(""); err != nil || len(names) != 0 {
		t.Fatalf("another run's prefix lists %q, %v", names, err)
	}
}

func TestS3WrongCredentials(t *testing.T) {
	ep := startWeed(t)
	_, err := OpenS3(Spec{Kind: S3, Bucket: "spate-test", Endpoint: ep}, "x", S3Options{Getenv: func(k string) string {
		return map[string]string{"AWS_ACCESS_KEY_ID": weedKey, "AWS_SECRET_ACCESS_KEY": "wrong"}[k]
	}})
	if err == nil || !strings.Contains(err.Error(), "--store s3://spate-test") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("OpenS3 with a wrong secret: %v; want one line naming --store", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Fatalf("the error shows the secret: %v", err)
	}
}

func TestS3BadSettings(t *testing.T) {
	// An endpoint where nothing listens: a port just closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	sp := Spec{Kind: S3, Bucket: "runs", Endpoint: dead}
	for _, tc := range []struct {
		name   string
		getenv func(string) string
		says   string
	}{
		{"no credentials", func(string) string { return "" }, "no credentials: set AWS_ACCESS_KEY_ID"},
		{"unreachable", weedEnv, "does not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenS3(sp, "r/checkpoints", S3Options{Getenv: tc.getenv, Timeout: 2 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.HasPrefix(err.Error(), "--store s3://runs") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("OpenS3 = %v; want one line starting --store s3://runs and saying %q", err, tc.says)
			}
		})
	}
	if _, err := OpenS3(Spec{Kind: Coord}, "", S3Options{}); !errors.Is(err, ErrSpec) {
		t.Fatalf("OpenS3 of a coord spec: %v", err)
	}
}

func TestS3LargeObject(t *testing.T) {
	ep := startWeed(t)
	s, err := OpenS3(Spec{Kind: S3, Bucket: "spate-test", Endpoint: ep}, fmt.Sprintf("run%d/big", runSeq.Add(1)), S3Options{Getenv: weedEnv})
	if err != nil {
		t.Fatal(err)
	}
	// Above the 64 MiB part size: a multipart upload, still one object
	// with one checksum.
	big := bytes.Repeat([]byte("0123456789abcdef"), (70<<20)/16)
	if err := s.Put("i#0/big", big[:35<<20], big[35<<20:]); err != nil {
		t.Fatal(err)
	}
	b, err := s.Get("i#0/big")
	if err != nil || !bytes.Equal(b, big) {
		t.Fatalf("Get of a multipart object: %d bytes, %v", len(b), err)
	}
}
