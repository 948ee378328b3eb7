package e2e

import (
	"fmt"
	"testing"
)

// TestDashboardFeaturesInTmux drives issue 12's features on the built
// binary at 80x24 and 160x48: navigation, sort arrows, filter counts,
// copy, drill-down, an applied pass and the history. (The mouse is
// driven by the tui package's tests: tmux does not pass a typed mouse
// report through to the pane.)
func TestDashboardFeaturesInTmux(t *testing.T) {
	requireTmux(t)
	bin := buildNodegc(t)
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			s := startSession(t, w, h, demoArgs(bin)...)
			s.waitText(t, "the Overview pane", overview...)
			s.waitText(t, "the history on Overview", `USAGE HISTORY|usage`, `FREED PER PASS|freed/pass`)
			checkFrame(t, s, w)

			t.Run("s sorts with an arrow, S reverses, G and g go to the bottom and top", func(t *testing.T) {
				s.press(t, "2", "s")
				s.waitText(t, "the size sort arrow", `SIZE▼`)
				s.press(t, "S")
				s.waitText(t, "the reversed arrow", `SIZE▲`)
				s.press(t, "G")
				s.waitText(t, "the position at the bottom", `(\d+)-(\d+) of (\d+)`)
				s.press(t, "g", "s", "s", "s")
				s.waitText(t, "the rank order again", `#▲`)
				checkFrame(t, s, w)
			})
			t.Run("a filter shows its match count and esc clears it", func(t *testing.T) {
				s.press(t, "/", "p", "a", "u", "s", "e", "Enter")
				s.waitText(t, "the match count", `filter: pause`, `\d+/\d+ match`)
				s.press(t, "Escape")
				s.waitGone(t, "the filter to clear", `filter: pause`)
			})
			t.Run("c copies the selected ID", func(t *testing.T) {
				s.press(t, "j", "c")
				s.waitText(t, "the copy notice", `copied sha256:`)
			})
			t.Run("enter opens an image's details and esc goes back", func(t *testing.T) {
				s.press(t, "Enter")
				s.waitText(t, "the image details", `Image `, `ORDER`, `CONTAINERS USING IT`)
				checkFrame(t, s, w)
				s.press(t, "Escape")
				s.waitGone(t, "the details to close", `CONTAINERS USING IT`)
			})
			t.Run("enter on a pod opens its sandboxes, containers and cgroup", func(t *testing.T) {
				s.press(t, "3", "Enter")
				s.waitText(t, "the pod details", `Pod `, `SANDBOXES`, `CGROUP`)
				s.press(t, "Escape")
				s.waitGone(t, "the details to close", `SANDBOXES`)
			})
			t.Run("an applied pass opens with what it removed, and feeds the history", func(t *testing.T) {
				s.press(t, "1", "x")
				s.waitText(t, "the container GC preview", `Force container GC`, `y`)
				s.press(t, "y")
				s.waitText(t, "the pass summary", `pass #\d+ \(containers\)`)
				s.press(t, "5")
				s.waitText(t, "the pass in Events", `containers\*`)
				s.press(t, "Enter")
				s.waitText(t, "the pass details", `Pass #\d+`, `CONTAINERS \(\d+\)`, `removed`)
				checkFrame(t, s, w)
				// esc alone: tmux would send esc and a key typed with it as
				// one alt+key.
				s.press(t, "Escape")
				s.waitGone(t, "the pass details to close", `Pass #\d+`)
				s.press(t, "1")
				s.waitText(t, "a pass in the history", `FREED PER PASS\s+1 pass this session|freed/pass`)
			})
			t.Run("the full help lists the new keys", func(t *testing.T) {
				s.press(t, "2", "?")
				s.waitText(t, "the new keys in help", `i\s+image GC`, `x\s+container GC`, `R\s+reclaim all`, `X\s+stop pass`, `g/home\s+top`, `enter/d\s+details`, `c\s+copy ID`, `S\s+reverse sort`)
				s.press(t, "?")
			})
			s.press(t, "q")
			if status := s.waitExit(t); status != "0" {
				t.Errorf("nodegc exited with status %q, want 0", status)
			}
		})
	}
}
