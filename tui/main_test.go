package tui

import (
	"testing"

	"github.com/nodegc/nodegc/internal/realnode"
)

// TestMain gives the engines the dashboards start a runtime lock dir of
// the test process's (realnode.PrivateRuntimeLocks), not the machine's
// /var/lib/nodegc/runtimes, which they would create and leave behind as
// root, and removes it after.
func TestMain(m *testing.M) { realnode.Main(m) }
