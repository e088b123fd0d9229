package node

import (
	"net"
	"testing"
)

// TestPeerListenAddrFollowsTheCoordinatorLink: a node given no --listen
// accepts its peers on the address it reaches the coordinator from (a
// node on another host: its address on the lab's network, which its
// peers can dial; on loopback, loopback), never on loopback by default.
func TestPeerListenAddrFollowsTheCoordinatorLink(t *testing.T) {
	cases := []struct {
		name   string
		listen string
		local  net.Addr
		want   string
	}{
		{"given", "0.0.0.0:7500", &net.TCPAddr{IP: net.ParseIP("10.0.0.7"), Port: 4242}, "0.0.0.0:7500"},
		{"another host", "", &net.TCPAddr{IP: net.ParseIP("10.0.0.7"), Port: 4242}, "10.0.0.7:0"},
		{"loopback", "", &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 4242}, "127.0.0.1:0"},
		{"IPv6", "", &net.TCPAddr{IP: net.ParseIP("fd00::7"), Port: 4242}, "[fd00::7]:0"},
		{"not TCP", "", &net.UnixAddr{Name: "mem:3"}, ""},
	}
	for _, tc := range cases {
		if got := peerListenAddr(tc.listen, tc.local); got != tc.want {
			t.Errorf("%s: peerListenAddr(%q, %v) = %q, want %q", tc.name, tc.listen, tc.local, got, tc.want)
		}
	}
	if d := DefaultConfig(); d.Listen != "" {
		t.Errorf("DefaultConfig().Listen = %q: a node on another host would accept its peers there only", d.Listen)
	}
}
