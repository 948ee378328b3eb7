package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/spf13/pflag"
)

// addParallelFlag adds --parallel, the pool width of a pass's removals.
func addParallelFlag(fs *pflag.FlagSet, p *int) {
	fs.IntVar(p, "parallel", engine.DefaultParallel, "removals a pass keeps in flight, fed in plan order and never past what the serial pass removes; 1 is the kubelet's strict one-at-a-time order")
}

// checkParallel rejects a pool width below 1.
func checkParallel(n int) error {
	if n < 1 {
		return usageErrorf("--parallel: must be at least 1, got %d", n)
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
