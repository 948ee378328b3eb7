package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/nodegc/nodegc/internal/realnode"
)

// TestMain gives the engines the tests start (the dashboards on their
// simulated nodes) a runtime lock dir of the test process's
// (realnode.PrivateRuntimeLocks), not the machine's, and removes it after.
func TestMain(m *testing.M) {
	unlock, err := realnode.PrivateRuntimeLocks()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	unlock()
	os.Exit(code)
}
