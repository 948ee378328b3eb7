package e2e

import (
	"fmt"
	"strings"
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

// TestMouseInTmux drives issue 12's mouse support on the built binary:
// a click on a tab switches panes, the wheel moves the cursor, and a
// click on a row selects it. tmux passes the SGR mouse reports typed into
// the pane to the program, as a terminal would send them.
func TestMouseInTmux(t *testing.T) {
	requireTmux(t)
	bin := buildNodegc(t)
	s := startSession(t, 100, 30, demoArgs(bin)...)
	s.waitText(t, "the Overview pane", overview...)
	// mouse sends a press and a release of button b at the 0-based cell
	// (x, y).
	mouse := func(b, x, y int) {
		s.tmux(t, "send-keys", "-t", s.name, "-l", fmt.Sprintf("\x1b[<%d;%d;%dM", b, x+1, y+1))
		if b < 64 { // wheel reports have no release
			s.tmux(t, "send-keys", "-t", s.name, "-l", fmt.Sprintf("\x1b[<%d;%d;%dm", b, x+1, y+1))
		}
	}
	cursorRow := func(rows []string) int {
		for i, r := range rows {
			if strings.HasPrefix(r, "▌") {
				return i
			}
		}
		return -1
	}
	tab := strings.Index(s.screen(t)[0], "3 Containers")
	if tab < 0 {
		t.Fatalf("no Containers tab on the tab bar: %q", s.screen(t)[0])
	}
	mouse(0, tab+2, 0)
	first := s.waitText(t, "the Containers pane after a click on its tab", deadCount.String())
	start := cursorRow(first)
	if start < 0 {
		t.Fatalf("no cursor row:\n%s", strings.Join(first, "\n"))
	}
	for range 3 {
		mouse(65, 10, start) // wheel down
	}
	s.waitFor(t, "the cursor three rows down after the wheel", func(rows []string) bool { return cursorRow(rows) == start+3 })
	mouse(0, 10, start+1)
	s.waitFor(t, "the cursor on the clicked row", func(rows []string) bool { return cursorRow(rows) == start+1 })
	s.press(t, "q")
	s.waitExit(t)
}
