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
// CRI call the runtime serves beside the kubelet's own calls. On real
// containerd 1.6 the removals' throughput was still rising at 32 in flight
// (issue 22), while every removal slowed the kubelet's PLEG calls; past a
// few dozen a wider pool buys little but memory and load on a node already
// in trouble. Without a bound a typo is a denial of service: --parallel
// 100000000 ran out of memory after planning (issue 20). 64 is twice the
// widest pool measured.
const maxParallel = 64

// addParallelFlag adds --parallel, the pool width of a pass's removals.
func addParallelFlag(fs *pflag.FlagSet, p *int) {
	fs.IntVar(p, "parallel", engine.DefaultParallel, fmt.Sprintf("removals a pass keeps in flight, fed in plan order and never past what the serial pass removes; 1 is the kubelet's strict one-at-a-time order, at most %d: past a few dozen a wider pool frees the disk little sooner and slows the kubelet's own runtime calls", maxParallel))
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
