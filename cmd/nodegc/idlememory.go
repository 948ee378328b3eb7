package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/nodegc/nodegc/engine"
)

// idleHeadroom is how far above what an idle dashboard holds at rest its
// soft memory limit is set: room for the frames, the usage readings and
// the event stream's garbage between two collections. On the large preset
// a fixed limit of 20 MiB, about 1 MiB above what the dashboard held, had
// the collector run nearly without pause (5.8% of a core against 0.2%);
// one of 22 MiB did not (README, Performance).
const idleHeadroom = 4 << 20

// idleMemory holds an idle dashboard's soft memory limit near what the
// process holds at rest (issue 22: RSS at most 45 MB, flat over 30
// minutes). At dashboardMemoryLimit the heap between passes grew by the
// frames' and readings' garbage until a collection, and the scavenger
// returned the pages after it only slowly: RSS drifted a megabyte or two
// above what the dashboard holds.
//
// After each release with no pass running and no listing in flight, the
// limit becomes what the process then holds (the Go runtime's mapped
// memory less what it has returned to the system: what the limit is
// measured against) plus idleHeadroom, never above dashboardMemoryLimit.
// A pass, or a listing for a refresh, first puts dashboardMemoryLimit
// back, so the collector never works against either: a refresh's and a
// pass's garbage grow the heap freely until release hands it back.
//
// It is safe for concurrent use: the scheduler's notices, the screen's
// listings and its releases come on goroutines of their own.
type idleMemory struct {
	mu       sync.Mutex
	pass     bool // a pass runs
	listings int  // listings for a refresh in flight

	// setLimit is debug.SetMemoryLimit and held reads what the process
	// holds; tests replace both.
	setLimit func(int64) int64
	held     func() uint64
}

// newIdleMemory returns the dashboard's idleMemory, or nil when the
// environment sets GOMEMLIMIT, which is then left alone. A nil
// *idleMemory is valid and does nothing.
func newIdleMemory() *idleMemory {
	if os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return &idleMemory{setLimit: debug.SetMemoryLimit, held: heldMemory}
}

// passes notes whether a pass runs (followPasses): a pass lifts the limit,
// and the release that follows it sets the idle one again.
func (m *idleMemory) passes(busy bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pass = busy
	if busy {
		m.setLimit(dashboardMemoryLimit)
	}
}

// snapshot wraps the dashboard's listing (tui.Options.Snapshot): it lifts
// the limit while the node is listed; the refresh's release sets the idle
// one again.
func (m *idleMemory) snapshot(list func(context.Context) (engine.Snapshot, error)) func(context.Context) (engine.Snapshot, error) {
	if m == nil {
		return list
	}
	return func(ctx context.Context) (engine.Snapshot, error) {
		m.mu.Lock()
		m.listings++
		m.setLimit(dashboardMemoryLimit)
		m.mu.Unlock()
		defer func() {
			m.mu.Lock()
			m.listings--
			m.mu.Unlock()
		}()
		return list(ctx)
	}
}

// released sets the idle limit after a release, unless a pass runs or a
// listing is in flight.
func (m *idleMemory) released() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pass || m.listings > 0 {
		return
	}
	m.setLimit(int64(min(m.held()+idleHeadroom, dashboardMemoryLimit)))
}

// release is release followed by m.released: the dashboard's
// tui.Options.AfterRefresh.
func (m *idleMemory) release() {
	release()
	m.released()
}

// heldMemory is what the Go runtime holds from the system, as the soft
// memory limit counts it: all it has mapped less the heap pages it has
// returned.
func heldMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
