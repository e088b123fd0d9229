package stores

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"spate/state"
	"spate/wire"
)

// crcKey is the user metadata that holds an object's CRC-32C, in hex
// (x-amz-meta-spate-crc32c on the wire).
const crcKey = "Spate-Crc32c"

// ObjectStore is a state.Store in an S3-compatible object store: the
// object PREFIX/NAME for each name. A PUT is atomic (an object appears
// whole or not at all) and durable once acknowledged; the content's
// CRC-32C goes with it in its metadata and every read checks it. It is
// safe for concurrent use.
type ObjectStore struct {
	cl      *minio.Client
	bucket  string
	prefix  string // "" or ending in "/"
	where   string // for messages: s3://bucket/prefix
	timeout time.Duration
	m       *meter
}

// Credentials reads the object store's keys from the environment (getenv:
// os.Getenv in the product): AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
// (and AWS_SESSION_TOKEN), or MINIO_ACCESS_KEY and MINIO_SECRET_KEY, or
// MINIO_ROOT_USER and MINIO_ROOT_PASSWORD, the first pair set. A pair set
// by half is an error naming the missing variable.
func Credentials(getenv func(string) string) (*credentials.Credentials, error) {
	for _, pair := range [][2]string{
		{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"},
		{"MINIO_ACCESS_KEY", "MINIO_SECRET_KEY"},
		{"MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD"},
	} {
		id, secret := getenv(pair[0]), getenv(pair[1])
		switch {
		case id != "" && secret != "":
			token := ""
			if pair[0] == "AWS_ACCESS_KEY_ID" {
				token = getenv("AWS_SESSION_TOKEN")
			}
			return credentials.NewStaticV4(id, secret, token), nil
		case id != "":
			return nil, fmt.Errorf("%s is set but %s is not", pair[0], pair[1])
		case secret != "":
			return nil, fmt.Errorf("%s is set but %s is not", pair[1], pair[0])
		}
	}
	return nil, errors.New("no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or MINIO_ACCESS_KEY and MINIO_SECRET_KEY) in the environment")
}

// S3Options are what OpenS3 takes besides the spec.
type S3Options struct {
	Getenv  func(string) string // nil: os.Getenv
	Timeout time.Duration       // per request; <= 0: DefaultTimeout
	// Transport, if set, carries the HTTP requests (tests, fault layers).
	Transport http.RoundTripper
}

// OpenS3 opens the object store of sp under PREFIX/sub/ (sub: the run
// and the space, "RUN/checkpoints"), making the bucket if it does not
// exist. It checks at once that the endpoint answers and that the
// credentials are accepted; errors are one line naming --store.
func OpenS3(sp Spec, sub string, opt S3Options) (*ObjectStore, error) {
	where := "s3://" + strings.Trim(sp.Bucket+"/"+sp.Prefix, "/")
	bad := func(format string, args ...any) error {
		return fmt.Errorf("--store %s (endpoint %s): %s", where, sp.Endpoint, fmt.Sprintf(format, args...))
	}
	if sp.Kind != S3 {
		return nil, specError(fmt.Sprintf("--store %q: not an s3:// store", sp.String()))
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	creds, err := Credentials(opt.Getenv)
	if err != nil {
		return nil, bad("%v", err)
	}
	base := opt.Transport
	if base == nil {
		tr, err := minio.DefaultTransport(sp.TLS)
		if err != nil {
			return nil, bad("%v", err)
		}
		base = tr
	}
	m := &meter{}
	cl, err := minio.New(sp.Endpoint, &minio.Options{Creds: creds, Secure: sp.TLS, Region: sp.Region,
		Transport: meteredTransport{base: base, m: m}, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, bad("%v", err)
	}
	prefix := strings.Trim(strings.Trim(sp.Prefix, "/")+"/"+strings.Trim(sub, "/"), "/")
	if prefix != "" {
		prefix += "/"
	}
	s := &ObjectStore{cl: cl, bucket: sp.Bucket, prefix: prefix, where: where + "/" + strings.TrimSuffix(prefix, "/"), timeout: opt.Timeout, m: m}
	ctx, cancel := context.WithTimeout(context.Background(), min(opt.Timeout, 15*time.Second))
	defer cancel()
	ok, err := cl.BucketExists(ctx, sp.Bucket)
	if err != nil {
		return nil, bad("the endpoint does not answer or refuses us: %v", oneLine(err))
	}
	if !ok {
		if err := cl.MakeBucket(ctx, sp.Bucket, minio.MakeBucketOptions{Region: sp.Region}); err != nil {
			if code := minio.ToErrorResponse(err).Code; code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
				return nil, bad("bucket %s does not exist and could not be made: %v", sp.Bucket, oneLine(err))
			}
		}
	}
	return s, nil
}

// Traffic implements Metered: the bodies of every HTTP request this
// store sent and every response it read, its opening checks included.
func (s *ObjectStore) Traffic() Traffic { return s.m.traffic() }

// oneLine keeps an error's message on one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

func (s *ObjectStore) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

func (s *ObjectStore) errf(op, name string, err error) error {
	return fmt.Errorf("stores: %s: %s %s: %w", s.where, op, name, err)
}

func notFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound" || code == "NoSuchObject"
}

// Put implements state.Store.
func (s *ObjectStore) Put(name string, data ...[]byte) error {
	if err := state.CheckName(name); err != nil {
		return err
	}
	var crc uint32
	var size int64
	rs := make([]io.Reader, len(data))
	for i, p := range data {
		crc = wire.CRC32C(crc, p)
		size += int64(len(p))
		rs[i] = bytes.NewReader(p)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := s.cl.PutObject(ctx, s.bucket, s.prefix+name, io.MultiReader(rs...), size, minio.PutObjectOptions{
		UserMetadata: map[string]string{crcKey: fmt.Sprintf("%08x", crc)},
		ContentType:  "application/octet-stream",
		PartSize:     64 << 20,
	})
	if err != nil {
		return s.errf("put", name, errors.New(oneLine(err)))
	}
	return nil
}

// Get implements state.Store.
func (s *ObjectStore) Get(name string) ([]byte, error) {
	rc, err := s.Open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Open implements state.Store: the object streams in as it is read, and
// its CRC-32C is checked at the end (the last Read fails, wrapping
// state.ErrCorrupt, if it does not match or is missing).
func (s *ObjectStore) Open(name string) (io.ReadCloser, error) {
	if err := state.CheckName(name); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	// One GET: its body and its headers (the CRC-32C) are of one version
	// of the object, whatever Puts replace it meanwhile. (minio.Object
	// would Stat first and then read with If-Match, failing the read of
	// an object replaced between the two.)
	body, info, _, err := minio.Core{Client: s.cl}.GetObject(ctx, s.bucket, s.prefix+name, minio.GetObjectOptions{})
	if err != nil {
		cancel()
		if notFound(err) {
			return nil, s.errf("get", name, state.ErrNotFound)
		}
		return nil, s.errf("get", name, errors.New(oneLine(err)))
	}
	want, err := crcOf(info)
	if err != nil {
		cancel()
		body.Close()
		return nil, s.errf("get", name, err)
	}
	return &objectReader{obj: body, cancel: cancel, want: want, size: info.Size, name: name, s: s}, nil
}

// crcOf is the CRC-32C an object was stored with.
func crcOf(info minio.ObjectInfo) (uint32, error) {
	var v string
	for k, val := range info.UserMetadata {
		if strings.EqualFold(k, crcKey) || strings.EqualFold(k, "X-Amz-Meta-"+crcKey) {
			v = val
		}
	}
	if v == "" {
		return 0, fmt.Errorf("%w: the object has no %s metadata: it was not written by spate, or lost it", state.ErrCorrupt, strings.ToLower(crcKey))
	}
	n, err := strconv.ParseUint(v, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %s metadata %q is not a hex CRC-32C", state.ErrCorrupt, strings.ToLower(crcKey), v)
	}
	return uint32(n), nil
}

type objectReader struct {
	obj    io.ReadCloser
	cancel context.CancelFunc
	s      *ObjectStore
	name   string
	want   uint32
	size   int64
	crc    uint32
	n      int64
	err    error
}

func (r *objectReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	k, err := r.obj.Read(p)
	r.crc = wire.CRC32C(r.crc, p[:k])
	r.n += int64(k)
	switch {
	case err == io.EOF:
		if r.n != r.size || r.crc != r.want {
			err = r.s.errf("get", r.name, fmt.Errorf("%w: %d bytes with CRC-32C %08x read, the object was stored with %d bytes and %08x", state.ErrCorrupt, r.n, r.crc, r.size, r.want))
		}
	case err != nil:
		err = r.s.errf("get", r.name, errors.New(oneLine(err)))
	}
	r.err = err
	return k, err
}

func (r *objectReader) Close() error {
	err := r.obj.Close()
	r.cancel()
	return err
}

// List implements state.Store.
func (s *ObjectStore) List(prefix string) ([]string, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var out []string
	for info := range s.cl.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if info.Err != nil {
			return nil, s.errf("list", strconv.Quote(prefix), errors.New(oneLine(info.Err)))
		}
		name := strings.TrimPrefix(info.Key, s.prefix)
		if state.CheckName(name) == nil && strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Delete implements state.Store. An object store deletes a missing key
// without complaint, so Delete asks first: two Deletes of one name at
// once may both succeed.
func (s *ObjectStore) Delete(name string) error {
	if err := state.CheckName(name); err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if _, err := s.cl.StatObject(ctx, s.bucket, s.prefix+name, minio.StatObjectOptions{}); err != nil {
		if notFound(err) {
			return s.errf("delete", name, state.ErrNotFound)
		}
		return s.errf("delete", name, errors.New(oneLine(err)))
	}
	if err := s.cl.RemoveObject(ctx, s.bucket, s.prefix+name, minio.RemoveObjectOptions{}); err != nil {
		return s.errf("delete", name, errors.New(oneLine(err)))
	}
	return nil
}

// putRaw stores data under name without spate's checksum metadata, as
// another program would: for tests of what a read of such an object does.
func (s *ObjectStore) putRaw(name string, data []byte, crc string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	opts := minio.PutObjectOptions{}
	if crc != "" {
		opts.UserMetadata = map[string]string{crcKey: crc}
	}
	_, err := s.cl.PutObject(ctx, s.bucket, s.prefix+name, bytes.NewReader(data), int64(len(data)), opts)
	return err
}
