package traces

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

const bufSize = 64 << 10

// input is the decompressed content of a trace file: gzip and bzip2 are
// detected by their magic bytes, and a tar (plain or compressed) is opened
// at its first regular file.
type input struct {
	path     string // as named in the spec
	name     string // for messages: path, or "path(member)" inside a tar
	format   string // "plain", "gzip", "bzip2", with " tar" appended for a tar
	r        *bufio.Reader
	f        *os.File
	seekable bool // plain file: f can seek to a content offset
}

var (
	magicGzip  = []byte{0x1f, 0x8b}
	magicBzip2 = []byte("BZh")
	magicXz    = []byte{0xfd, '7', 'z', 'X', 'Z', 0}
	magicZstd  = []byte{0x28, 0xb5, 0x2f, 0xfd}
	magicZip   = []byte("PK\x03\x04")
)

// openInput opens path and positions the content at byte off.
func openInput(path string, off int64) (*input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	in := &input{path: path, name: path, format: "plain", f: f}
	if err := in.init(off); err != nil {
		f.Close()
		return nil, err
	}
	return in, nil
}

func (in *input) init(off int64) error {
	if st, err := in.f.Stat(); err == nil && st.IsDir() {
		return fmt.Errorf("%s: is a directory", in.path)
	}
	br := bufio.NewReaderSize(in.f, bufSize)
	magic, _ := br.Peek(6)
	var r io.Reader = br
	switch {
	case bytes.HasPrefix(magic, magicGzip):
		gz, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%s: gzip: %v", in.path, err)
		}
		r, in.format = gz, "gzip"
	case bytes.HasPrefix(magic, magicBzip2):
		r, in.format = bzip2.NewReader(br), "bzip2"
	case bytes.HasPrefix(magic, magicXz):
		return fmt.Errorf("%s: xz is not supported (recompress with gzip or bzip2)", in.path)
	case bytes.HasPrefix(magic, magicZstd):
		return fmt.Errorf("%s: zstd is not supported (recompress with gzip or bzip2)", in.path)
	case bytes.HasPrefix(magic, magicZip):
		return fmt.Errorf("%s: zip is not supported (use a tar, gzip or bzip2)", in.path)
	}
	if r != io.Reader(br) {
		br = bufio.NewReaderSize(r, bufSize)
	}
	head, err := br.Peek(512)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return in.readErr(err)
	}
	if len(head) >= 262 && string(head[257:262]) == "ustar" {
		tr := tar.NewReader(br)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				return fmt.Errorf("%s: %w: a tar without a regular file", in.path, ErrMalformed)
			}
			if err != nil {
				return fmt.Errorf("%s: tar: %v", in.path, err)
			}
			if h.Typeflag == tar.TypeReg {
				in.name = fmt.Sprintf("%s(%s)", in.path, h.Name)
				break
			}
		}
		br = bufio.NewReaderSize(tr, bufSize)
		if in.format == "plain" {
			in.format = "tar"
		} else {
			in.format += " tar"
		}
	}
	in.r = br
	in.seekable = in.format == "plain"
	if off > 0 {
		if in.seekable {
			if _, err := in.f.Seek(off, io.SeekStart); err != nil {
				return fmt.Errorf("%s: %v", in.path, err)
			}
			in.r.Reset(in.f)
		} else if _, err := io.CopyN(io.Discard, in.r, off); err != nil {
			return in.readErr(err)
		}
	}
	return nil
}

// readErr names the file in an error met while reading it.
func (in *input) readErr(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%s: unexpected end of file (truncated?)", in.name)
	}
	if in.format != "plain" {
		return fmt.Errorf("%s: %s: %v", in.name, in.format, err)
	}
	return fmt.Errorf("%s: %v", in.name, err)
}

func (in *input) Close() error { return in.f.Close() }
