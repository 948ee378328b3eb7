package proctune

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// idleHeadroom is the least room an idle dashboard's soft memory limit
// leaves above what it holds at rest: room for the frames', the usage
// readings' and the event stream's garbage between two collections. On
// the large preset a fixed limit of 20 MiB, about 1 MiB above what the
// dashboard held, had the collector run nearly without pause (5.8% of a
// core against 0.2%); one of 22 MiB did not (docs/performance.md). On a
// larger node the room is half the live heap, so that the limit is never
// tighter at rest than the dashboard's GOGC (DashboardGCPercent) makes
// the heap's own goal.
const idleHeadroom = 4 << 20

// IdleMemory holds an idle dashboard's soft memory limit near what the
// process holds at rest (issue 22: RSS at most 45 MB, flat over 30
// minutes). At DashboardMemoryLimit alone the scavenger handed the pages
// freed between passes back slowly, and the anonymous memory stayed 2 MB
// above what it is with this limit (docs/performance.md).
//
// After each release with no pass running and no screen read in flight,
// the limit becomes what the process then holds (the Go runtime's mapped
// memory less what it has returned to the system: what the limit is
// measured against) plus the headroom. A pass, as soon as its notice
// comes, and each of the screen's reads that can allocate much put back
// the limit a pass has, DashboardMemoryLimit (or the idle one, when that
// is higher). After a pass, a listing, a plan or a journal read, whose
// results stay, the next release sets the idle limit again, measured
// afresh; a release during which a lift came does not (it measured a
// read in flight). After a light poll or a cgroup read, whose results
// are garbage or small, the idle limit comes back as the read ends. A
// pass's first moments may run under the idle limit, before its notice
// is taken; the limit is soft, so that costs CPU, never memory.
//
// It is safe for concurrent use: the scheduler's notices, the screen's
// reads and its releases come on goroutines of their own. A nil
// *IdleMemory does nothing.
type IdleMemory struct {
	mu       sync.Mutex
	pass     bool   // a pass runs
	inflight int    // the screen's reads in flight
	pending  bool   // a pass or a read whose results stay lifted the limit since the last release set it
	lifts    uint64 // lifts so far
	idle     int64  // the idle limit last set; 0 before the first

	// setLimit is debug.SetMemoryLimit, held reads what the process holds
	// and live the live heap; tests replace them.
	setLimit func(int64) int64
	held     func() (held, live uint64)
}

// NewIdleMemory returns the dashboard's IdleMemory, or nil when the
// environment sets GOMEMLIMIT, which is then left alone.
func NewIdleMemory() *IdleMemory {
	if os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return &IdleMemory{setLimit: debug.SetMemoryLimit, held: heldMemory}
}

// lift puts back the limit a pass has; m.mu is held.
func (m *IdleMemory) lift() {
	m.lifts++
	m.setLimit(max(DashboardMemoryLimit, m.idle))
}

// Passes notes whether a pass runs (WhileIdle): a pass lifts the limit,
// and the release that follows it sets the idle one again.
func (m *IdleMemory) Passes(busy bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pass = busy
	if busy {
		m.pending = true
		m.lift()
	}
}

// Begin lifts the limit for one of the screen's reads, until end is
// called. keeps says the read's results stay (a listing, a plan, the
// journal): the next release sets the idle limit again; else end does.
func (m *IdleMemory) Begin(keeps bool) (end func()) {
	if m == nil {
		return func() {}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inflight++
	m.pending = m.pending || keeps
	m.lift()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.inflight--
		if m.inflight == 0 && !m.pass && !m.pending && m.idle > 0 {
			m.setLimit(m.idle)
		}
	}
}

// Read wraps one of the screen's reads (a listing, the journal) in
// Begin.
func Read[T any](m *IdleMemory, keeps bool, f func(context.Context) (T, error)) func(context.Context) (T, error) {
	if f == nil {
		return nil
	}
	return func(ctx context.Context) (T, error) {
		defer m.Begin(keeps)()
		return f(ctx)
	}
}

// Release is Release followed by setting the idle limit, unless a pass
// runs, a read is in flight, or a lift came meanwhile: the dashboard's
// tui.Options.AfterRefresh.
func (m *IdleMemory) Release() {
	if m == nil {
		Release()
		return
	}
	m.mu.Lock()
	lifts := m.lifts
	m.mu.Unlock()
	Release()
	m.released(lifts)
}

// released sets the idle limit after a release that began after lifts
// lifts: what the process holds, plus idleHeadroom or half the live
// heap, whichever is more.
func (m *IdleMemory) released(lifts uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pass || m.inflight > 0 || m.lifts != lifts {
		return
	}
	held, live := m.held()
	m.pending = false
	m.idle = int64(held + max(idleHeadroom, live*DashboardGCPercent/100))
	m.setLimit(m.idle)
}

// heldMemory is what the Go runtime holds from the system, as the soft
// memory limit counts it (all it has mapped less the heap pages it has
// returned), and the heap live at the last collection.
func heldMemory() (held, live uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64(), s[2].Value.Uint64()
}

// NewIdleMemoryWith returns an IdleMemory that sets its limit with
// setLimit and reads what the process holds (and its live heap) with
// held, instead of the runtime's: for the tests of what wraps it.
func NewIdleMemoryWith(setLimit func(int64) int64, held func() (held, live uint64)) *IdleMemory {
	return &IdleMemory{setLimit: setLimit, held: held}
}
