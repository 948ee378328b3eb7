package main

import (
	"context"
	"runtime"
	"slices"
	"testing"

	"github.com/nodegc/nodegc/engine"
)

// TestIdleMemoryLimit pins when the dashboard's soft memory limit moves:
// down to what it holds plus idleHeadroom at a release with nothing in
// flight, up to dashboardMemoryLimit as a pass or a listing starts, and
// never down while either runs.
func TestIdleMemoryLimit(t *testing.T) {
	const held = 19 << 20
	const idle = held + idleHeadroom
	type step string // "pass", "idle", "list" (a listing begins), "listed" (it ends), "release"
	for _, tc := range []struct {
		name  string
		held  uint64
		steps []step
		want  []int64 // the limits set, in order
	}{
		{"a release at rest sets what the process holds plus the headroom", held,
			[]step{"release"}, []int64{idle}},
		{"a pass lifts it, and the release after the pass sets it again", held,
			[]step{"release", "pass", "idle", "release"}, []int64{idle, dashboardMemoryLimit, idle}},
		{"a pass's end alone does not set it: the pass's garbage is still there", held,
			[]step{"pass", "idle"}, []int64{dashboardMemoryLimit}},
		{"a release while a pass runs leaves it lifted", held,
			[]step{"pass", "release", "idle", "release"}, []int64{dashboardMemoryLimit, idle}},
		{"a listing lifts it, and its refresh's release sets it again", held,
			[]step{"release", "list", "listed", "release"}, []int64{idle, dashboardMemoryLimit, idle}},
		{"a release while a listing is in flight leaves it lifted", held,
			[]step{"list", "release", "listed", "release"}, []int64{dashboardMemoryLimit, idle}},
		{"never above the limit a pass has", dashboardMemoryLimit - 1<<20,
			[]step{"release"}, []int64{dashboardMemoryLimit}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			m := &idleMemory{
				setLimit: func(l int64) int64 { got = append(got, l); return 0 },
				held:     func() uint64 { return tc.held },
			}
			in, out := make(chan struct{}), make(chan struct{})
			list := m.snapshot(func(context.Context) (engine.Snapshot, error) {
				in <- struct{}{}
				<-out
				return engine.Snapshot{}, nil
			})
			done := make(chan struct{})
			for _, s := range tc.steps {
				switch s {
				case "pass", "idle":
					m.passes(s == "pass")
				case "list":
					done = make(chan struct{})
					go func() {
						defer close(done)
						_, _ = list(t.Context())
					}()
					<-in
				case "listed":
					out <- struct{}{}
					<-done
				case "release":
					m.released()
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("limits set %v; want %v", got, tc.want)
			}
		})
	}
}

// TestIdleMemoryLeavesGOMEMLIMITAlone pins that an environment's
// GOMEMLIMIT is the limit the whole run: no idleMemory, and its nil
// methods do nothing.
func TestIdleMemoryLeavesGOMEMLIMITAlone(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "64MiB")
	m := newIdleMemory()
	if m != nil {
		t.Fatal("an idleMemory with GOMEMLIMIT set")
	}
	m.passes(true)
	m.released()
	list := func(context.Context) (engine.Snapshot, error) { return engine.Snapshot{}, nil }
	if _, err := m.snapshot(list)(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestHeldMemoryIsWhatTheLimitCounts checks heldMemory against what the
// process does: 32 MiB made live is held, and handed back by release it
// is not.
func TestHeldMemoryIsWhatTheLimitCounts(t *testing.T) {
	release()
	before := heldMemory()
	b := make([]byte, 32<<20)
	for i := range b {
		b[i] = 1
	}
	grown := heldMemory()
	if grown < before+32<<20 {
		t.Errorf("held %d MiB with 32 MiB more live; %d MiB before", grown>>20, before>>20)
	}
	runtime.KeepAlive(b)
	b = nil
	release()
	if after := heldMemory(); after > grown-24<<20 {
		t.Errorf("held %d MiB after handing back 32 MiB; %d MiB before", after>>20, grown>>20)
	}
}
