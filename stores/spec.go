package stores

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// Kind is where a run's checkpoints and output go.
type Kind string

const (
	// Auto is the default: the run directory for a node that can see it
	// (every node spawned by the coordinator, and a joining node on the
	// same host or a shared file system), the coordinator for the others.
	Auto  Kind = ""
	Dir   Kind = "dir"   // the run directory, for every node
	Coord Kind = "coord" // the coordinator, over each node's session
	S3    Kind = "s3"    // an S3-compatible object store
)

// Spec is a parsed --store value.
type Spec struct {
	Kind     Kind
	Bucket   string // s3
	Prefix   string // s3: without leading or trailing slashes; may be empty
	Endpoint string // s3: HOST[:PORT]
	TLS      bool   // s3: https
	Region   string // s3: optional
}

// ErrSpec marks a malformed --store value (errors.Is); the message is
// one line starting "--store VALUE:".
var ErrSpec = errors.New("stores: malformed --store value")

type specError string

func (e specError) Error() string        { return string(e) }
func (e specError) Is(target error) bool { return target == ErrSpec }

// Usage is the accepted forms, for messages and help.
const Usage = "dir, coord or s3://BUCKET[/PREFIX]?endpoint=HOST:PORT[&tls=true][&region=R]"

// Parse parses a --store value: "" (auto), "dir", "coord" or
// "s3://BUCKET[/PREFIX]?endpoint=HOST:PORT[&tls=true][&region=R]". An
// endpoint may also be written https://HOST[:PORT] (tls) or
// http://HOST[:PORT]; without one, the store is AWS S3 over TLS. Errors
// wrap ErrSpec and say what is wrong in one line naming --store.
func Parse(s string) (Spec, error) {
	bad := func(format string, args ...any) (Spec, error) {
		return Spec{}, specError(fmt.Sprintf("--store %q: ", s) + fmt.Sprintf(format, args...))
	}
	switch s {
	case "", "auto":
		return Spec{Kind: Auto}, nil
	case "dir":
		return Spec{Kind: Dir}, nil
	case "coord":
		return Spec{Kind: Coord}, nil
	}
	if !strings.HasPrefix(s, "s3://") {
		return bad("want %s", Usage)
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad("%v", err)
	}
	if u.User != nil {
		return bad("credentials do not go in the URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
	}
	if u.Fragment != "" {
		return bad("unexpected #%s", u.Fragment)
	}
	sp := Spec{Kind: S3, Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if sp.Bucket == "" {
		return bad("no bucket: want %s", Usage)
	}
	if err := s3utils.CheckValidBucketNameStrict(sp.Bucket); err != nil {
		return bad("bucket %q: %v", sp.Bucket, err)
	}
	if strings.Contains(sp.Prefix, "//") || strings.HasPrefix(sp.Prefix, ".") || strings.Contains(sp.Prefix, "/.") {
		return bad("prefix %q: empty element or one starting with '.'", sp.Prefix)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("query: %v", err)
	}
	for k, v := range q {
		if len(v) != 1 {
			return bad("%s given %d times", k, len(v))
		}
		switch k {
		case "endpoint":
			ep := v[0]
			switch {
			case strings.HasPrefix(ep, "https://"):
				sp.TLS, ep = true, strings.TrimPrefix(ep, "https://")
			case strings.HasPrefix(ep, "http://"):
				ep = strings.TrimPrefix(ep, "http://")
			}
			if err := checkHostPort(ep); err != nil {
				return bad("endpoint %q: %v", v[0], err)
			}
			sp.Endpoint = ep
		case "tls":
			b, err := strconv.ParseBool(v[0])
			if err != nil {
				return bad("tls=%q: want true or false", v[0])
			}
			sp.TLS = sp.TLS || b
		case "region":
			sp.Region = v[0]
		default:
			return bad("unknown parameter %q (have endpoint, tls, region)", k)
		}
	}
	if sp.Endpoint == "" {
		sp.Endpoint, sp.TLS = "s3.amazonaws.com", true
	}
	return sp, nil
}

func checkHostPort(ep string) error {
	if ep == "" || strings.ContainsAny(ep, "/?#@ ") {
		return errors.New("want HOST:PORT")
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			host, port = ep, ""
		} else {
			return errors.New("want HOST:PORT")
		}
	}
	if host == "" {
		return errors.New("no host")
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q: want 1..65535", port)
		}
	}
	return nil
}

// String is the canonical --store value of sp.
func (sp Spec) String() string {
	if sp.Kind != S3 {
		return string(sp.Kind)
	}
	s := "s3://" + sp.Bucket
	if sp.Prefix != "" {
		s += "/" + sp.Prefix
	}
	q := url.Values{"endpoint": {sp.Endpoint}}
	if sp.TLS {
		q.Set("tls", "true")
	}
	if sp.Region != "" {
		q.Set("region", sp.Region)
	}
	return s + "?" + q.Encode()
}
