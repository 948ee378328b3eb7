package e2e

import (
	"testing"

	"github.com/nodegc/nodegc/internal/realnode"
)

// TestMain gives the engines the tests start (the dashboards on their
// simulated nodes) a runtime lock dir of the test process's
// (realnode.PrivateRuntimeLocks), not the machine's, and removes it after.
func TestMain(m *testing.M) { realnode.Main(m) }
