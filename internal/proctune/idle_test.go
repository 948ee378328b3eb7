package proctune

import (
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
)

// TestIdleMemoryLimit pins when the dashboard's soft memory limit moves:
// down to what it holds plus its headroom at a release with nothing in
// flight, up to the limit a pass has as a pass or a read starts, never
// down while either runs or when a lift came during the release, and back
// to the idle limit as a light read ends.
func TestIdleMemoryLimit(t *testing.T) {
	const held, live = 19 << 20, 7 << 20
	const idle = held + idleHeadroom
	const big = DashboardMemoryLimit + 10<<20 // a large node's: half its live heap is more than idleHeadroom
	const bigIdle = big + big/2
	// Steps: "pass" and "idle" (the scheduler's notices), "read" and
	// "light" (one of the screen's reads begins whose results stay, or
	// one whose do not), "done" (the oldest read in flight ends),
	// "release" (a whole release), "release/lift" (a release during
	// which a read begins and ends).
	for _, tc := range []struct {
		name       string
		held, live uint64
		steps      []string
		want       []int64 // the limits set, in order
	}{
		{"a release at rest sets what the process holds plus the headroom", held, live,
			[]string{"release"}, []int64{idle}},
		{"a pass lifts it, and the release after the pass sets it again", held, live,
			[]string{"release", "pass", "idle", "release"}, []int64{idle, DashboardMemoryLimit, idle}},
		{"a pass's end alone does not set it: the pass's garbage is still there", held, live,
			[]string{"pass", "idle"}, []int64{DashboardMemoryLimit}},
		{"a release while a pass runs leaves it lifted", held, live,
			[]string{"pass", "release", "idle", "release"}, []int64{DashboardMemoryLimit, idle}},
		{"a read lifts it, and the release after it sets it again", held, live,
			[]string{"release", "read", "done", "release"}, []int64{idle, DashboardMemoryLimit, idle}},
		{"a release while a read is in flight leaves it lifted", held, live,
			[]string{"read", "release", "done", "release"}, []int64{DashboardMemoryLimit, idle}},
		{"a release during which a read came and went leaves it lifted", held, live,
			[]string{"release/lift", "release"}, []int64{DashboardMemoryLimit, idle}},
		{"a light read lifts it, and its end puts the idle one back", held, live,
			[]string{"release", "light", "done"}, []int64{idle, DashboardMemoryLimit, idle}},
		{"a light read's end leaves it lifted while a read whose results stay awaits its release", held, live,
			[]string{"release", "read", "light", "done", "done", "release"}, []int64{idle, DashboardMemoryLimit, DashboardMemoryLimit, idle}},
		{"a light read's end leaves it lifted while a pass runs", held, live,
			[]string{"release", "pass", "light", "done"}, []int64{idle, DashboardMemoryLimit, DashboardMemoryLimit}},
		{"a light read before the first release leaves the limit a pass has", held, live,
			[]string{"light", "done"}, []int64{DashboardMemoryLimit}},
		{"on a node whose live heap is large, the headroom is half of it, and a lift keeps that", big, big,
			[]string{"release", "pass", "idle", "release"}, []int64{bigIdle, bigIdle, bigIdle}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			m := &IdleMemory{
				setLimit: func(l int64) int64 { got = append(got, l); return 0 },
				held:     func() (uint64, uint64) { return tc.held, tc.live },
			}
			var ends []func()
			for _, s := range tc.steps {
				switch s {
				case "pass", "idle":
					m.Passes(s == "pass")
				case "read", "light":
					ends = append(ends, m.Begin(s == "read"))
				case "done":
					ends[0]()
					ends = ends[1:]
				case "release":
					m.Release()
				case "release/lift":
					m.mu.Lock()
					lifts := m.lifts
					m.mu.Unlock()
					m.Begin(false)()
					m.released(lifts)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("limits set %v; want %v", got, tc.want)
			}
		})
	}
}

// TestIdleMemoryLeavesGOMEMLIMITAlone pins that an environment's
// GOMEMLIMIT is the limit the whole run: no IdleMemory, and its methods
// do nothing.
func TestIdleMemoryLeavesGOMEMLIMITAlone(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "64MiB")
	m := NewIdleMemory()
	if m != nil {
		t.Fatal("an IdleMemory with GOMEMLIMIT set")
	}
	m.Passes(true)
	m.Begin(true)()
	m.Release()
}

// TestHeldMemoryIsWhatTheLimitCounts checks heldMemory against what the
// process does: 32 MiB made live is held, and handed back by release it
// is not. The collector is off while it measures, so that no collection
// of other tests' garbage moves the figures.
func TestHeldMemoryIsWhatTheLimitCounts(t *testing.T) {
	Release()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	before, _ := heldMemory()
	b := make([]byte, 32<<20)
	for i := range b {
		b[i] = 1
	}
	grown, _ := heldMemory()
	if grown < before+24<<20 {
		t.Errorf("held %d MiB with 32 MiB more live; %d MiB before", grown>>20, before>>20)
	}
	runtime.KeepAlive(b)
	b = nil
	Release()
	if after, _ := heldMemory(); after > grown-24<<20 {
		t.Errorf("held %d MiB after handing back 32 MiB; %d MiB before", after>>20, grown>>20)
	}
}
