package proctune

import (
	"os"
	"runtime"

	"github.com/nodegc/nodegc/engine"
)

// Passes is what WhileIdle follows of a scheduler: its status and
// notices (engine.Controller has both).
type Passes interface {
	Status() engine.Status
	Subscribe() (<-chan engine.Notice, func())
}

// WhileIdle follows the scheduler's passes until the returned func is
// called. It runs the dashboard's Go scheduler on one P while no pass
// runs, and on the runtime's default (the CPUs the process may use) while
// one does (Status.Running); the returned func puts the default back.
// Idle, a second P only lets each wake-up of the renderer's ticker wake a
// second thread that finds nothing to do; a pass keeps them all (at one P
// the large preset's first container pass took nearly twice the CPU).
// docs/performance.md has the figures. The environment's GOMAXPROCS,
// when set, is left alone. It also tells mem when a pass runs.
func WhileIdle(s Passes, mem *IdleMemory) (stop func()) {
	procs := os.Getenv("GOMAXPROCS") == ""
	if !procs && mem == nil {
		return func() {}
	}
	notices, cancel := s.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		followPasses(notices, s.Status(), func(busy bool) {
			mem.Passes(busy)
			if procs {
				setProcs(busy)
			}
		})
	}()
	return func() {
		cancel()
		<-done
		if procs {
			runtime.SetDefaultGOMAXPROCS()
		}
	}
}

// setProcs gives the Go scheduler its default Ps while a pass runs (busy),
// one otherwise.
func setProcs(busy bool) {
	if busy {
		runtime.SetDefaultGOMAXPROCS()
		return
	}
	runtime.GOMAXPROCS(1)
}

// followPasses calls set with whether a pass runs, from the first status
// st, then each notice's, until notices is closed; a status that changes
// nothing calls nothing. Every notice carries the whole status, and a
// subscriber that falls behind loses its oldest notices, never the
// newest, so it settles on the scheduler's latest state.
func followPasses(notices <-chan engine.Notice, st engine.Status, set func(busy bool)) {
	var cur *bool
	apply := func(st engine.Status) {
		busy := st.Running != ""
		if cur == nil || *cur != busy {
			set(busy)
			cur = &busy
		}
	}
	apply(st)
	for n := range notices {
		apply(n.Status)
	}
}
