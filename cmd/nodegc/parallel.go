package main

import (
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/spf13/pflag"
)

// addParallelFlag adds --parallel, the pool of a pass's removals: a number
// pins it (engine.DefaultParallel by default), "auto" adapts it to the
// runtime.
func addParallelFlag(fs *pflag.FlagSet, p *int) {
	*p = engine.DefaultParallel
	fs.Var(parallelValue{p}, "parallel", fmt.Sprintf("removals a pass keeps in flight, fed in plan order and never past what the serial pass removes: a number from 1 to %d, 1 being the kubelet's strict one-at-a-time order; or auto (experimental), which starts each phase at one, doubles while the removals per second rise, and halves when the runtime's listings (the calls the kubelet's PLEG make, which it probes during the pass) slow past what one at a time causes", engine.MaxParallel))
}

// parallelValue is --parallel's value: "auto" (stored as
// engine.AutoParallel) or a width from 1 to engine.MaxParallel.
// Without a bound a typo is a denial of service: --parallel 100000000 ran
// out of memory after planning (issue 20).
type parallelValue struct{ p *int }

func (v parallelValue) String() string {
	if v.p == nil {
		return strconv.Itoa(engine.DefaultParallel)
	}
	if *v.p == engine.AutoParallel {
		return "auto"
	}
	return strconv.Itoa(*v.p)
}

func (v parallelValue) Set(s string) error {
	if s == "auto" {
		*v.p = engine.AutoParallel
		return nil
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return fmt.Errorf("must be auto or from 1 to %d, got %q", engine.MaxParallel, s)
	case n < 1 || n > engine.MaxParallel:
		return fmt.Errorf("must be auto or from 1 to %d, got %d", engine.MaxParallel, n)
	}
	*v.p = n
	return nil
}

func (v parallelValue) Type() string { return "auto|N" }

// checkParallel rejects a pool width that is neither the adaptive pool's
// (engine.AutoParallel) nor from 1 to engine.MaxParallel.
func checkParallel(n int) error {
	if n != engine.AutoParallel && (n < 1 || n > engine.MaxParallel) {
		return usageErrorf("--parallel: must be auto or from 1 to %d, got %d", engine.MaxParallel, n)
	}
	return nil
}

// progressLine returns a progress listener that redraws one line on w
// (a terminal) and a func that ends the line; when w is not a terminal
// both do nothing.
func progressLine(w io.Writer, terminal bool) (func(engine.Progress), func()) {
	if !terminal {
		return func(engine.Progress) {}, func() {}
	}
	var mu sync.Mutex
	drawn := false
	show := func(p engine.Progress) {
		mu.Lock()
		defer mu.Unlock()
		line := fmt.Sprintf("\rpass %d: %d/%d items", p.Pass, p.ItemsDone, p.Items)
		if p.Bytes > 0 {
			line += fmt.Sprintf(", %s/%s of images", format.Bytes(p.BytesDone), format.Bytes(p.Bytes))
		}
		fmt.Fprint(w, line+"\x1b[K")
		drawn = true
	}
	end := func() {
		mu.Lock()
		defer mu.Unlock()
		if drawn {
			fmt.Fprint(w, "\r\x1b[K")
		}
	}
	return show, end
}
