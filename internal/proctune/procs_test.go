package proctune

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"weak"

	"github.com/nodegc/nodegc/engine"
)

// TestOneProcWhileIdle pins when the dashboard's Ps change: to the
// default while a pass runs, to one otherwise, each change once, in the
// order the scheduler publishes (Scheduler.do: Running set, then cleared
// with the report, before the next pass sets it again).
func TestOneProcWhileIdle(t *testing.T) {
	idle := engine.Status{}
	running := func(k engine.PassKind) engine.Status { return engine.Status{Running: k} }
	for _, tc := range []struct {
		name    string
		first   engine.Status
		notices []engine.Status
		want    []bool // the busy flags set, in order
	}{
		{"an idle start: one P", idle, nil, []bool{false}},
		{"a pass: the default while it runs, one after", idle,
			[]engine.Status{running(engine.PassContainers), running(engine.PassContainers), idle}, []bool{false, true, false}},
		{"started inside a pass: the default at once", running(engine.PassImages),
			[]engine.Status{idle}, []bool{true, false}},
		{"notices of an idle node change nothing", idle,
			[]engine.Status{idle, idle, idle}, []bool{false}},
		{"two passes one after the other: one P between them", idle,
			[]engine.Status{running(engine.PassContainers), idle, running(engine.PassImages), idle}, []bool{false, true, false, true, false}},
		{"a subscriber that fell behind settles on the latest", idle,
			[]engine.Status{running(engine.PassImages)}, []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := make(chan engine.Notice, len(tc.notices))
			for _, st := range tc.notices {
				ch <- engine.Notice{Status: st}
			}
			close(ch)
			var got []bool
			followPasses(ch, tc.first, func(busy bool) { got = append(got, busy) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("busy set %v; want %v", got, tc.want)
			}
		})
	}
}

// TestReleaseFreesWhatPoolsHeld pins that Release frees what a sync.Pool
// held when it ran, as gRPC's receive buffers are after a large listing:
// the first collection only moves a pool's objects to its victim cache.
func TestReleaseFreesWhatPoolsHeld(t *testing.T) {
	var pool sync.Pool
	b := new([1 << 20]byte)
	w := weak.Make(b)
	pool.Put(b)
	b = nil
	Release()
	if w.Value() != nil {
		t.Error("a buffer a pool held is still live after Release")
	}
	runtime.KeepAlive(&pool)
}
