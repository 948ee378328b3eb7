package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/spf13/pflag"
)

// maxParallel is the largest --parallel. Each removal in flight is one
// CRI call the runtime serves at the same time as the kubelet's; the
// runtime serializes the deletions behind its metadata store and the disk
// frees no faster, so past a few dozen a wider pool buys nothing but memory
// and load on a node already in trouble. Without a bound a typo is a
// denial of service: --parallel 100000000 ran out of memory after planning
// (issue 20). 64 is 16 times the default, far past where a pass stops
// getting faster.
const maxParallel = 64

// addParallelFlag adds --parallel, the pool width of a pass's removals.
func addParallelFlag(fs *pflag.FlagSet, p *int) {
	fs.IntVar(p, "parallel", engine.DefaultParallel, fmt.Sprintf("removals a pass keeps in flight, fed in plan order and never past what the serial pass removes; 1 is the kubelet's strict one-at-a-time order, at most %d: the runtime serializes deletions, so a wider pool frees the disk no faster and only loads the node", maxParallel))
}

// checkParallel rejects a pool width below 1 or above maxParallel.
func checkParallel(n int) error {
	if n < 1 || n > maxParallel {
		return usageErrorf("--parallel: must be from 1 to %d, got %d", maxParallel, n)
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
