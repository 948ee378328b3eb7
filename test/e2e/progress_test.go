package e2e

import (
	"fmt"
	"testing"
)

// TestPassProgressAndStopInTmux drives issue 12's progress of a running
// pass on the built binary: the small demo's removals are slowed to
// 300 ms each, so a reclaim-all pass runs long enough to watch its
// progress on the status line, and X stops it after the items in flight;
// the pass's summary then counts what it left undone.
func TestPassProgressAndStopInTmux(t *testing.T) {
	requireTmux(t)
	bin := buildNodegc(t)
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			s := startSession(t, w, h, append(demoArgs(bin), "--demo-remove-latency", "300ms")...)
			s.waitText(t, "the Overview pane", overview...)
			s.press(t, "R")
			s.waitText(t, "the reclaim-all preview", `Reclaim all unused`, `TOTAL \d+ items`)
			s.press(t, "y")
			s.waitText(t, "the pass's progress", `pass( #\d+)?: \d+ of \d+ items`, `X stop`)
			s.press(t, "X")
			s.waitText(t, "the stopped pass's summary", `not run \d+`)
			s.press(t, "q")
			s.waitExit(t)
		})
	}
}
