package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
)

// Issue 22 item 2: a periodic container pass skipped on a node unchanged
// since the last full one (engine.RunPeriodic) says so where a pass
// shows: the Overview's last pass, and its Events row and details, not
// "removed 0 … ok".
func TestSkippedPassSaysSo(t *testing.T) {
	why := "unchanged since pass #2 (no container event, nothing due by the clock); a full pass runs by 12:04:00"
	r := engine.PassReport{ID: 3, Run: "r1", Kind: engine.PassContainers, StartedAt: fixedNow, FinishedAt: fixedNow,
		Items: []engine.ItemResult{}, Events: []engine.Event{}, Skipped: why}
	m, c := fixtureModel(t, 200, 40)
	st := engine.Status{Passes: 8, LastReport: &r, Seq: 6}
	c.mu.Lock()
	c.status = st
	c.mu.Unlock()
	m = send(m, noticeMsg{n: engine.Notice{Report: &r, Status: st}, ch: c.ch, ok: true})
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "#3 containers <1m ago (12:00:00): skipped, "+why) {
		t.Errorf("the Overview's last pass does not say it was skipped and why:\n%s", s)
	}
	m = send(m, keyMsg("5"))
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "skipped: node unchanged") {
		t.Errorf("the Events row of a skipped pass does not say so:\n%s", s)
	}
	s := ansi.Strip(send(m, keyMsg("enter")).Screen())
	if !strings.Contains(s, "SKIPPED   "+why) {
		t.Errorf("the details of a skipped pass do not say why:\n%s", s)
	}
	if strings.Contains(s, "had nothing to do") || !strings.Contains(s, "the pass was skipped") {
		t.Errorf("the details of a skipped pass say it had nothing to do, not that it was skipped:\n%s", s)
	}
}
