package cri

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"
)

// socketDir returns a short temporary directory: unix socket paths are
// limited to 108 bytes, which t.TempDir's test-named paths can exceed.
func socketDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// serve starts a simulated node on a fresh socket and returns it with its
// endpoint; the node stops when the test ends.
func serve(t testing.TB, o simnode.Options) (*simnode.Node, string) {
	t.Helper()
	n := simnode.New(o)
	ep := "unix://" + filepath.Join(socketDir(t), "cri.sock")
	l, err := simnode.Listen(ep)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Serve(l) }()
	t.Cleanup(func() {
		n.Stop()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return n, ep
}

// dial connects a client to ep; it closes when the test ends.
func dial(t testing.TB, ep string, o Options) *Client {
	t.Helper()
	c, err := Dial(context.Background(), ep, o)
	if err != nil {
		t.Fatalf("dial %s: %v", ep, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// simStatfs is the engine's Statfs over a simulated node.
func simStatfs(n *simnode.Node) func(string) (engine.FsStats, error) { return simfs.Local(n) }
