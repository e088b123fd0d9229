package stores

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
	}{
		{"", Spec{Kind: Auto}},
		{"auto", Spec{Kind: Auto}},
		{"dir", Spec{Kind: Dir}},
		{"coord", Spec{Kind: Coord}},
		{"s3://runs?endpoint=127.0.0.1:8333", Spec{Kind: S3, Bucket: "runs", Endpoint: "127.0.0.1:8333"}},
		{"s3://runs/lab/a/?endpoint=localhost:9000&region=eu-west-1", Spec{Kind: S3, Bucket: "runs", Prefix: "lab/a", Endpoint: "localhost:9000", Region: "eu-west-1"}},
		{"s3://runs/p?endpoint=https://s3.example.org", Spec{Kind: S3, Bucket: "runs", Prefix: "p", Endpoint: "s3.example.org", TLS: true}},
		{"s3://runs/p?endpoint=minio:9000&tls=true", Spec{Kind: S3, Bucket: "runs", Prefix: "p", Endpoint: "minio:9000", TLS: true}},
		{"s3://runs", Spec{Kind: S3, Bucket: "runs", Endpoint: "s3.amazonaws.com", TLS: true}},
		{"s3://runs?endpoint=[::1]:9000", Spec{Kind: S3, Bucket: "runs", Endpoint: "[::1]:9000"}},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if again, err := Parse(got.String()); err != nil || again != got {
			t.Errorf("Parse(%q.String() = %q) = %+v, %v", tc.in, got.String(), again, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, says string }{
		{"nfs", "want dir, coord or s3://"},
		{"s3:/x", "want dir, coord or s3://"},
		{"s3://?endpoint=h:1", "no bucket"},
		{"s3://Bad_Bucket?endpoint=h:1", "bucket"},
		{"s3://key:secret@runs?endpoint=h:1", "credentials do not go in the URL"},
		{"s3://runs?endpoint=", "endpoint"},
		{"s3://runs?endpoint=h:99999", "port"},
		{"s3://runs?endpoint=h:1/path", "endpoint"},
		{"s3://runs?endpoint=h:1&endpoint=h:2", "given 2 times"},
		{"s3://runs?endpoint=h:1&tls=maybe", "tls"},
		{"s3://runs?endpoint=h:1&secret=x", `unknown parameter "secret"`},
		{"s3://runs/a//b?endpoint=h:1", "prefix"},
		{"s3://runs/../b?endpoint=h:1", "prefix"},
	} {
		_, err := Parse(tc.in)
		if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Parse(%q) = %v; want ErrSpec saying %q", tc.in, err, tc.says)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "--store") {
			t.Errorf("Parse(%q): %q is not one line naming --store", tc.in, msg)
		}
	}
}

func TestCredentials(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name   string
		getenv func(string) string
		id     string
		says   string
	}{
		{"aws", env("AWS_ACCESS_KEY_ID", "a", "AWS_SECRET_ACCESS_KEY", "b", "MINIO_ACCESS_KEY", "m", "MINIO_SECRET_KEY", "n"), "a", ""},
		{"minio", env("MINIO_ACCESS_KEY", "m", "MINIO_SECRET_KEY", "n"), "m", ""},
		{"minio root", env("MINIO_ROOT_USER", "r", "MINIO_ROOT_PASSWORD", "p"), "r", ""},
		{"none", env(), "", "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{"half", env("AWS_ACCESS_KEY_ID", "a"), "", "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"},
		{"other half", env("MINIO_SECRET_KEY", "n"), "", "MINIO_SECRET_KEY is set but MINIO_ACCESS_KEY is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Credentials(tc.getenv)
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("Credentials = %v, want an error saying %q", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, err := c.GetWithContext(nil)
			if err != nil || v.AccessKeyID != tc.id {
				t.Fatalf("access key %q, %v; want %q", v.AccessKeyID, err, tc.id)
			}
		})
	}
}
