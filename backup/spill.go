package backup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// A spill file holds one sealed chunk, written once and never changed:
//
//	"SPSG" | kg uint16 | records uint32 | size uint32 | crc32c(records) uint32 | records
//
// (integers little-endian). The buffer keeps the file name, size and
// checksum in memory and checks all of them when it reads the file back.
const spillHeader = 4 + 2 + 4 + 4 + 4

var (
	spillMagic = []byte("SPSG")
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// spill writes the oldest marked chunks to files until the records in
// memory are within MemLimit. When nothing more can be spilled it sets
// stuck, so that Full reports backpressure and Append stops trying until a
// Mark or a trim.
func (b *Buffer) spill() error {
	for b.mem > b.cfg.MemLimit {
		c := b.nextSpillable()
		if c == nil {
			b.stuck.Store(true)
			return nil
		}
		if err := b.writeSpill(c); err != nil {
			b.stuck.Store(true)
			b.setSpillErr(err)
			return err
		}
		b.sealed[b.qhead] = nil
		b.qhead++
	}
	if b.qhead >= 64 && 2*b.qhead >= len(b.sealed) {
		n := copy(b.sealed, b.sealed[b.qhead:])
		clear(b.sealed[n:])
		b.sealed = b.sealed[:n]
		b.qhead = 0
	}
	return nil
}

// nextSpillable returns the oldest sealed chunk in memory if the last Mark
// covered it, else nil. Marks cover chunks in seal order, so once the
// oldest is not covered none is.
func (b *Buffer) nextSpillable() *chunk {
	for b.qhead < len(b.sealed) {
		c := b.sealed[b.qhead]
		if c.freed || c.file != "" || c.lg.owner != b || c.data == nil {
			b.sealed[b.qhead] = nil
			b.qhead++
			continue
		}
		if !c.lg.covers(c) {
			return nil
		}
		return c
	}
	return nil
}

// covers reports whether the last Mark of the log covered all of sealed
// chunk c.
func (lg *kgLog) covers(c *chunk) bool {
	if lg.reset {
		return false
	}
	return c.serial < lg.markSerial || c.serial == lg.markSerial && lg.markOff >= c.size
}

// writeSpill moves chunk c to a new file in SpillDir.
func (b *Buffer) writeSpill(c *chunk) error {
	f, err := os.CreateTemp(b.cfg.SpillDir, "backup-*.seg")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSpill, err)
	}
	sum := crc32.Checksum(c.data, castagnoli)
	var hdr [spillHeader]byte
	copy(hdr[:], spillMagic)
	binary.LittleEndian.PutUint16(hdr[4:], uint16(c.lg.kg))
	binary.LittleEndian.PutUint32(hdr[6:], uint32(c.n))
	binary.LittleEndian.PutUint32(hdr[10:], uint32(c.size))
	binary.LittleEndian.PutUint32(hdr[14:], sum)
	_, err = f.Write(hdr[:])
	if err == nil {
		_, err = f.Write(c.data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("%w: writing %s: %v", ErrSpill, f.Name(), err)
	}
	c.file = f.Name()
	c.crc = sum
	lg := c.lg
	b.release(c)
	c.data = nil
	lg.spillBytes.Add(int64(spillHeader + c.size))
	lg.spillFiles.Add(1)
	return nil
}

// readSpill reads spilled chunk c back and returns its records, checked
// against what the buffer remembers. With scratch set it reads into
// b.scratch (grown as needed): the records are valid until the next read.
func (b *Buffer) readSpill(c *chunk, scratch bool) ([]byte, error) {
	var dst []byte
	if scratch {
		defer func() { b.scratch = dst }()
		dst = b.scratch
	}
	f, err := os.Open(c.file)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpill, err)
	}
	defer f.Close()
	n := spillHeader + c.size
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	if _, err := io.ReadFull(f, dst); err != nil {
		return nil, fmt.Errorf("%w: %w: reading %s: %v", ErrSpill, ErrCorrupt, c.file, err)
	}
	var one [1]byte
	if k, _ := f.Read(one[:]); k != 0 {
		return nil, fmt.Errorf("%w: %w: %s: longer than %d bytes", ErrSpill, ErrCorrupt, c.file, n)
	}
	hdr, data := dst[:spillHeader], dst[spillHeader:]
	switch {
	case !bytes.Equal(hdr[:4], spillMagic):
		return nil, fmt.Errorf("%w: %w: %s: bad magic", ErrSpill, ErrCorrupt, c.file)
	case binary.LittleEndian.Uint16(hdr[4:]) != uint16(c.lg.kg),
		binary.LittleEndian.Uint32(hdr[6:]) != uint32(c.n),
		binary.LittleEndian.Uint32(hdr[10:]) != uint32(c.size),
		binary.LittleEndian.Uint32(hdr[14:]) != c.crc:
		return nil, fmt.Errorf("%w: %w: %s: header does not match the chunk written", ErrSpill, ErrCorrupt, c.file)
	case crc32.Checksum(data, castagnoli) != c.crc:
		return nil, fmt.Errorf("%w: %w: %s: checksum mismatch", ErrSpill, ErrCorrupt, c.file)
	}
	return data, nil
}

// unspill reads back every spilled chunk of the logs into memory, all or
// nothing: on an error nothing changes. The files are then removed.
func (b *Buffer) unspill(logs []*kgLog) error {
	type loaded struct {
		c    *chunk
		data []byte
	}
	var got []loaded
	for _, lg := range logs {
		for _, c := range lg.chunks {
			if c.file == "" {
				continue
			}
			data, err := b.readSpill(c, false)
			if err != nil {
				return err
			}
			got = append(got, loaded{c, data})
		}
	}
	for _, l := range got {
		c, lg := l.c, l.c.lg
		if err := os.Remove(c.file); err != nil {
			b.setSpillErr(fmt.Errorf("%w: removing %s: %v", ErrSpill, c.file, err))
		}
		lg.spillBytes.Add(-int64(spillHeader + c.size))
		lg.spillFiles.Add(-1)
		c.file = ""
		c.data = l.data
		b.mem += int64(cap(c.data))
		lg.memBytes.Add(int64(cap(c.data)))
	}
	return nil
}
