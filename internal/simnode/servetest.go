package simnode

import (
	"os"
	"path/filepath"
	"testing"
)

// ServeTemp serves a new node of the options on a socket in a short temp
// dir (unix socket paths are limited to 108 bytes) until the test ends, and
// returns it with its endpoint: the double every test above the socket
// starts.
func ServeTemp(tb testing.TB, o Options) (*Node, string) {
	tb.Helper()
	node := New(o)
	dir, err := os.MkdirTemp("", "nodegc-sim-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	ep := "unix://" + filepath.Join(dir, "sim.sock")
	l, err := Listen(ep)
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- node.Serve(l) }()
	tb.Cleanup(func() {
		node.Stop()
		<-done
	})
	return node, ep
}
