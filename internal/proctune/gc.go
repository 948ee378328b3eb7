package proctune

import (
	"os"
	"runtime"
	"runtime/debug"
)

// DashboardGCPercent is the dashboard's GOGC unless the environment sets
// one: a dashboard left open on a node in trouble keeps its heap within
// 1.5 times what it holds (under 80 MB on a 1,000-pod node) rather than
// twice, for about no CPU, since an idle dashboard allocates little.
const DashboardGCPercent = 50

// DashboardMemoryLimit is the dashboard's soft memory limit unless the
// environment sets GOMEMLIMIT: the heap it holds on a 1,000-pod node is
// 10–25 MB, and the limit makes the collector return the garbage of a
// refresh before the heap grows past it.
const DashboardMemoryLimit = 40 << 20

// Dashboard applies DashboardGCPercent unless GOGC is set, and
// DashboardMemoryLimit unless GOMEMLIMIT is. It also fixes GOMAXPROCS at
// the value the runtime chose at start: otherwise the runtime reads the
// cgroup's CPU limit again every second for as long as the dashboard
// idles (it would follow a limit changed while it runs; a dashboard does
// not need to).
func Dashboard() {
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DashboardGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(DashboardMemoryLimit)
	}
}

// Release hands the garbage of a refresh or a pass back to the system,
// for the dashboard (tui.Options.AfterRefresh) and the agent (after each
// pass). Two collections: the first only moves what the sync.Pools hold
// to their victim caches (gRPC's receive buffers, a megabyte each for a
// large node's listings, among them), and the second, FreeOSMemory's,
// frees those and returns every free page. After FreeOSMemory alone they
// stayed resident until the next pass's first collection, about 2 MB for
// the minute after each image pass (docs/performance.md). Then it
// unmaps the binary's code and constant data (dropCodePages): a pass
// runs code the idle process does not, and otherwise its pages stay
// mapped for good.
func Release() {
	runtime.GC()
	debug.FreeOSMemory()
	// Nothing is lost when it fails: the pages stay mapped, as before.
	_ = dropCodePages()
}

// AgentGCPercent is the agent's GOGC unless the environment sets GOGC.
// The agent has no memory limit of its own (the dashboard's 40 MiB
// GOMEMLIMIT sits near a large node's live heap, and made each of the
// agent's passes collect over and over: 0.81% of a core idle where GOGC
// alone costs 0.13-0.17%). GOMEMLIMIT, when the environment sets it,
// still applies.
const AgentGCPercent = 25

// Agent applies AgentGCPercent unless GOGC is set.
func Agent() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(AgentGCPercent)
	}
}
