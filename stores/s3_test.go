package stores

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"spate/state"
	"spate/state/storetest"
	"spate/stores/weedtest"
)

func TestMain(m *testing.M) { os.Exit(weedtest.Main(m)) }

func startWeed(t *testing.T) string { return weedtest.Start(t) }

func weedEnv(k string) string { return weedtest.Getenv(k) }

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
		return map[string]string{"AWS_ACCESS_KEY_ID": weedtest.Key, "AWS_SECRET_ACCESS_KEY": "wrong"}[k]
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

func TestS3StoreCountsItsTrafficBothWays(t *testing.T) {
	ep := startWeed(t)
	s, err := OpenS3(Spec{Kind: S3, Bucket: "spate-test", Endpoint: ep}, fmt.Sprintf("run%d/traffic", runSeq.Add(1)), S3Options{Getenv: weedEnv})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300_000
	data := bytes.Repeat([]byte("s"), n)
	before := s.Traffic()
	if err := s.Put("count-0/ck-1", data); err != nil {
		t.Fatal(err)
	}
	if got := s.Traffic().ToStore - before.ToStore; got < n {
		t.Errorf("a put of %d bytes counts %d sent", n, got)
	}
	mid := s.Traffic()
	if b, err := s.Get("count-0/ck-1"); err != nil || len(b) != n {
		t.Fatalf("get: %d bytes, %v", len(b), err)
	}
	if got := s.Traffic().FromStore - mid.FromStore; got < n {
		t.Errorf("a get of %d bytes counts %d received", n, got)
	}
}
