package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Store streams (SPEC.md, "Store streams"): a node asks the coordinator
// to put, get, list or delete one file of the run's checkpoint or output
// store, one request per yamux stream on its coordinator session.

// StoreOp is what a store request asks.
type StoreOp string

const (
	StorePut    StoreOp = "put"    // content follows the request: store-data..., store-end
	StoreGet    StoreOp = "get"    // the reply is followed by the content
	StoreList   StoreOp = "list"   // the reply carries the names
	StoreDelete StoreOp = "delete" // the reply says whether the name was there
	StoreVerify StoreOp = "verify" // the coordinator reads the checkpoint file and checks it: ok, not-found or corrupt
)

// StoreSpace is which of the run's stores a request is about.
type StoreSpace string

const (
	SpaceCheckpoints StoreSpace = "checkpoints" // checkpoints/ of the run
	SpaceOutput      StoreSpace = "output"      // output/ of the run: the sinks' segments
	// SpaceInput is read-only: the run's input file (a trace: or rate:
	// source), under the name InputSource, for a node on another host.
	SpaceInput StoreSpace = "input"
)

// InputSource is the name of the source's file in SpaceInput.
const InputSource = "source"

// StoreRequest is the first frame of a store stream (type store).
type StoreRequest struct {
	Op     StoreOp    `json:"op"`
	Space  StoreSpace `json:"space"`
	Name   string     `json:"name,omitempty"`   // put, get, delete, verify
	Prefix string     `json:"prefix,omitempty"` // list
}

// StoreStatus is the outcome of a store request.
type StoreStatus string

const (
	StoreOK       StoreStatus = "ok"
	StoreNotFound StoreStatus = "not-found" // get, delete: no such name
	StoreBadName  StoreStatus = "bad-name"  // the name breaks state.CheckName
	StoreCorrupt  StoreStatus = "corrupt"   // put: the content failed its checksum or length on the way; verify: the file failed its checks
	StoreFailed   StoreStatus = "failed"    // anything else; Error says what
)

// StoreReply is the coordinator's answer (type store-reply).
type StoreReply struct {
	Status StoreStatus `json:"status"`
	Error  string      `json:"error,omitempty"`
	Names  []string    `json:"names,omitempty"` // list, sorted
}

// StoreChunk is the largest store-data payload a sender writes: content
// of any size travels in pieces well below the frame limit.
const StoreChunk = 1 << 20

// ErrChecksum is returned by ReadContent when the content that arrived
// does not match the CRC-32C or the length of its store-end frame.
var ErrChecksum = errors.New("wire: content checksum mismatch")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C returns the CRC-32C (Castagnoli) of data appended to crc: the
// checksum of store-end frames, of checkpoint files and of stored objects.
func CRC32C(crc uint32, data []byte) uint32 { return crc32.Update(crc, castagnoli, data) }

// EncodeStoreEnd is a store-end payload: u32be CRC-32C, uvarint length.
func EncodeStoreEnd(crc uint32, n uint64) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+binary.MaxVarintLen64), crc)
	return binary.AppendUvarint(b, n)
}

// DecodeStoreEnd decodes a store-end payload.
func DecodeStoreEnd(p []byte) (crc uint32, n uint64, err error) {
	if len(p) < 5 {
		return 0, 0, &payloadError{t: TStoreEnd, what: fmt.Sprintf("%d bytes: want a 4-byte CRC-32C and a length", len(p))}
	}
	crc = binary.BigEndian.Uint32(p)
	n, k := binary.Uvarint(p[4:])
	if k <= 0 {
		return 0, 0, &payloadError{t: TStoreEnd, what: "length: truncated or overflowing uvarint at byte 4"}
	}
	if 4+k != len(p) {
		return 0, 0, &payloadError{t: TStoreEnd, what: fmt.Sprintf("%d bytes after the length", len(p)-4-k)}
	}
	return crc, n, nil
}

// WriteContent writes parts, one after the other, as store-data frames of
// at most StoreChunk bytes (small parts gathered into one frame) and a
// store-end frame, then flushes. It returns the content's CRC-32C.
func (w *Writer) WriteContent(parts ...[]byte) (uint32, error) {
	var crc uint32
	var n uint64
	buf := w.scratch[:0]
	for _, p := range parts {
		crc = CRC32C(crc, p)
		n += uint64(len(p))
		for len(p) > 0 {
			k := min(len(p), StoreChunk-len(buf))
			buf = append(buf, p[:k]...)
			p = p[k:]
			if len(buf) == StoreChunk {
				if err := w.WriteFrame(TStoreData, buf); err != nil {
					return 0, err
				}
				buf = buf[:0]
			}
		}
	}
	if len(buf) > 0 {
		if err := w.WriteFrame(TStoreData, buf); err != nil {
			return 0, err
		}
	}
	if cap(buf) <= keepBuffer {
		w.scratch = buf[:0]
	}
	if err := w.WriteFrame(TStoreEnd, EncodeStoreEnd(crc, n)); err != nil {
		return 0, err
	}
	return crc, w.Flush()
}

// ReadContent reads store-data frames up to a store-end frame, handing
// each piece to piece (valid until it returns), and checks the CRC-32C and
// the length; a mismatch wraps ErrChecksum. Content above limit bytes (0:
// no limit) is refused before piece sees it; a frame of another type is
// malformed.
func (r *Reader) ReadContent(limit uint64, piece func([]byte) error) error {
	var crc uint32
	var n uint64
	for {
		t, p, err := r.ReadFrame()
		if err != nil {
			return err
		}
		switch t {
		case TStoreData:
			n += uint64(len(p))
			if limit > 0 && n > limit {
				return fmt.Errorf("%w: store content: more than %d bytes", ErrFrameTooLarge, limit)
			}
			crc = CRC32C(crc, p)
			if err := piece(p); err != nil {
				return err
			}
		case TStoreEnd:
			want, wantN, err := DecodeStoreEnd(p)
			if err != nil {
				return err
			}
			if wantN != n || want != crc {
				return fmt.Errorf("%w: %d bytes with CRC-32C %08x arrived, the sender sent %d bytes with %08x", ErrChecksum, n, crc, wantN, want)
			}
			return nil
		default:
			return &payloadError{t: t, what: "unexpected in store content (want store-data or store-end)"}
		}
	}
}
