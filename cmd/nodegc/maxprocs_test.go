package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestDashboardMaxProcs pins the dashboard's GOMAXPROCS: 1, unless the
// environment sets GOMAXPROCS, whose value the runtime took at start and
// which stays. lightGC applies it to the process (and its GC settings,
// restored here with GOMAXPROCS).
func TestDashboardMaxProcs(t *testing.T) {
	for _, tc := range []struct {
		envSet bool
		cur    int
		want   int
	}{
		{false, 2, 1},
		{false, 8, 1},
		{false, 1, 1},
		{true, 2, 2},
		{true, 6, 6},
	} {
		if got := dashboardMaxProcs(tc.envSet, tc.cur); got != tc.want {
			t.Errorf("dashboardMaxProcs(%v, %d) = %d; want %d", tc.envSet, tc.cur, got, tc.want)
		}
	}

	t.Setenv("GOMAXPROCS", "") // as if unset
	procs := runtime.GOMAXPROCS(0)
	gc := debug.SetGCPercent(100)
	debug.SetGCPercent(gc)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	})
	runtime.GOMAXPROCS(2)
	lightGC()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("after lightGC, GOMAXPROCS = %d; want 1", got)
	}
}
