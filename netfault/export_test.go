package netfault

import (
	"net"
	"testing"
)

// What the external tests (partition_test.go, which needs chaos's
// partition plans and so cannot be in this package) use of this
// package's test helpers.

type Collector = collector

var (
	NewTestLayer = newTestLayer
	NewLink      = newLink
	Collect      = collect
	MustSet      = mustSet
)

func (l link) StreamPair(t *testing.T) (net.Conn, net.Conn) { return l.streamPair(t) }
func (k *collector) WaitLen(t *testing.T, n int) []byte     { return k.waitLen(t, n) }
func (k *collector) Bytes() []byte                          { return k.bytes() }
