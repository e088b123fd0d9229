package node

import (
	"math/bits"
	"sync"
)

// Batch payloads are recycled. A stream's reader copies each batch frame
// out of its read buffer into a buffer of this pool and hands it to the
// instance; the instance gives it back once the batch is applied. A
// record is borrowed (job.Record): whatever keeps one past the call that
// handed it over copies it, so once applyBatch has returned nothing
// points into the payload. A message something kept whole (an
// alignment's held input, global.go) is given back when it is applied
// later. Without the pool every batch was a new allocation: the runtime
// clears a fresh array and the kernel maps its pages in, again and again
// as the collector hands the freed ones back.
//
// Buffers come in power-of-two capacities from 4 KiB to 16 MiB (the
// largest frame), one sync.Pool per capacity; a payload larger than that
// is allocated and left to the collector.
const (
	minPayloadShift = 12
	maxPayloadShift = 24
)

var payloadPools [maxPayloadShift - minPayloadShift + 1]sync.Pool

// payloadClass is the index of the smallest capacity class holding n
// bytes, or -1 if n is above the largest.
func payloadClass(n int) int {
	if n <= 1<<minPayloadShift {
		return 0
	}
	shift := bits.Len(uint(n - 1))
	if shift > maxPayloadShift {
		return -1
	}
	return shift - minPayloadShift
}

// getPayload returns a buffer of length n, from the pool if it can.
func getPayload(n int) []byte {
	c := payloadClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	if p, _ := payloadPools[c].Get().(*[]byte); p != nil {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<(c+minPayloadShift))
}

// putPayload gives b back to the pool. Only buffers getPayload made are
// taken (a capacity of one of the classes exactly); b must not be used
// again by the caller.
func putPayload(b []byte) {
	c := payloadClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+minPayloadShift) {
		return
	}
	b = b[:0]
	payloadPools[c].Put(&b)
}
