package proctune

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// Environment variables that make the dashboard (or the agent) profile
// itself, to find what its idle time goes to (scripts/measure-idle.sh
// PROFILE=DIR): from profileAfter into the run, for profileFor (or
// until it ends), a CPU profile; at the start and the end of that
// window, heap profiles (FILE.base and FILE): `go tool pprof
// -sample_index=alloc_space -base FILE.base` shows what the window
// allocated.
// Unset, nothing is profiled.
const (
	cpuProfileEnv   = "NODEGC_CPUPROFILE"
	heapProfileEnv  = "NODEGC_HEAPPROFILE"
	profileAfterEnv = "NODEGC_PROFILE_AFTER"
	profileForEnv   = "NODEGC_PROFILE_FOR"
)

// Profile starts the profiles the environment asks for and returns a func
// that ends the window early (when the dashboard ends). What goes wrong is
// said on errw.
func Profile(errw io.Writer) (stop func()) {
	cpu, heap := os.Getenv(cpuProfileEnv), os.Getenv(heapProfileEnv)
	if cpu == "" && heap == "" {
		return func() {}
	}
	warn := func(err error) { fmt.Fprintf(errw, "nodegc: profile: %v\n", err) }
	after, err := time.ParseDuration(cmp.Or(os.Getenv(profileAfterEnv), "0s"))
	if err != nil {
		warn(fmt.Errorf("%s: %w", profileAfterEnv, err))
		return func() {}
	}
	if heap != "" {
		// Finer than the default 512 KiB: an idle minute allocates a few
		// megabytes in small pieces.
		runtime.MemProfileRate = 16 << 10
	}
	var span time.Duration
	if v := os.Getenv(profileForEnv); v != "" {
		if span, err = time.ParseDuration(v); err != nil {
			warn(fmt.Errorf("%s: %w", profileForEnv, err))
			return func() {}
		}
	}
	w := &profileWindow{cpu: cpu, heap: heap, span: span, warn: warn}
	begin := time.AfterFunc(after, w.begin)
	return func() {
		begin.Stop()
		w.end()
	}
}

// profileWindow is one profiling window: it begins on a timer and ends
// after its span, or when the dashboard ends, whichever comes first; an
// end before the beginning means it never begins.
type profileWindow struct {
	// cpu and heap are the profiles' files, "" for one not asked for.
	cpu, heap string
	// span is how long the window lasts, 0 for until the end.
	span time.Duration
	warn func(error)

	mu      sync.Mutex
	started bool
	ended   bool
	cpuFile *os.File
}

// begin opens the window: the base heap profile, then the CPU profile,
// and the timer that ends it after its span.
func (w *profileWindow) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.started = true
	w.writeHeap(w.heap + ".base")
	if w.cpu != "" {
		w.startCPU()
	}
	if w.span > 0 {
		time.AfterFunc(w.span, w.end)
	}
}

// startCPU starts the CPU profile into its file; a failure is warned of
// and leaves no profile running.
func (w *profileWindow) startCPU() {
	f, err := os.Create(w.cpu)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		w.warn(fmt.Errorf("%s: %w", cpuProfileEnv, err))
		return
	}
	w.cpuFile = f
}

// end closes the window once: it stops the CPU profile and writes the
// final heap profile, if the window had begun.
func (w *profileWindow) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started || w.ended {
		w.ended = true
		return
	}
	w.ended = true
	if w.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := w.cpuFile.Close(); err != nil {
			w.warn(fmt.Errorf("%s: %w", cpuProfileEnv, err))
		}
	}
	w.writeHeap(w.heap)
}

// writeHeap writes a heap profile to path, after a collection so that it
// is current; nothing when no heap profile was asked for.
func (w *profileWindow) writeHeap(path string) {
	if w.heap == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(path)
	if err == nil {
		err = errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
	}
	if err != nil {
		w.warn(fmt.Errorf("%s: %w", heapProfileEnv, err))
	}
}
