package tui

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/nodegc/nodegc/engine"
	"strings"
	"testing"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// screenLine returns the screen's line holding s, and its row.
func screenLine(m Model, s string) (string, int) {
	for i, l := range strings.Split(ansi.Strip(m.Screen()), "\n") {
		if strings.Contains(l, s) {
			return l, i
		}
	}
	return "", -1
}

// clickText clicks the first cell of s on the screen.
func clickText(t *testing.T, m Model, s string) Model {
	t.Helper()
	l, y := screenLine(m, s)
	if y < 0 {
		t.Fatalf("%q is not on the screen:\n%s", s, ansi.Strip(m.Screen()))
	}
	x := ansi.StringWidth(l[:strings.Index(l, s)])
	return send(m, tea.MouseClickMsg{X: x, Y: y, Button: tea.MouseLeft})
}

// Issue 23 item 27: a click on a header sorts by its column (btop), a
// second click reverses, and the arrow shows which column sorts.
func TestClickHeaderSorts(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	m = press(m, "2")
	m = clickText(t, m, "SIZE")
	if l, _ := screenLine(m, "SIZE"); !strings.Contains(l, "SIZE▼") {
		t.Fatalf("a click on SIZE did not sort by size:\n%s", ansi.Strip(m.Screen()))
	}
	if l, _ := screenLine(m, "▌"); !strings.Contains(l, "2.1 GiB") {
		t.Errorf("largest first, got %q", l)
	}
	m = clickText(t, m, "SIZE")
	if l, _ := screenLine(m, "SIZE"); !strings.Contains(l, "SIZE▲") {
		t.Errorf("a second click did not reverse:\n%s", l)
	}
	m = clickText(t, m, "LAST USED")
	if l, _ := screenLine(m, "LAST USED"); !strings.Contains(l, "LAST USED▼") || strings.Contains(l, "SIZE▲") {
		t.Errorf("a click on LAST USED did not move the sort there: %q", l)
	}
	// Cgroups: MEMORY.
	m = press(m, "4")
	m = clickText(t, m, "MEMORY")
	if l, _ := screenLine(m, "MEMORY"); !strings.Contains(l, "MEMORY▼") {
		t.Errorf("a click on MEMORY did not sort the cgroups: %q", l)
	}
	// Containers: the pod column cycles its orders.
	m = press(m, "3")
	m = clickText(t, m, "POD / CONTAINER")
	if l, _ := screenLine(m, "POD BY"); !strings.Contains(l, "POD BY DEAD COUNT▼") {
		t.Errorf("a click on the pod column did not sort the pods by dead count:\n%s", ansi.Strip(m.Screen()))
	}
}

// Issue 23 item 28: until the first snapshot, the status line says what is
// being listed and for how long, with a spinner that turns.
func TestLoadingShowsProgress(t *testing.T) {
	c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	now := fixedNow
	m := New(fixtureOptions(c, &now))
	m = send(m, tea.WindowSizeMsg{Width: 100, Height: 30})
	now = fixedNow.Add(16 * time.Second)
	l, _ := screenLine(m, "listing")
	if !strings.Contains(l, "images, containers and sandboxes through CRI") || !strings.Contains(l, "16s") {
		t.Fatalf("no progress while the first snapshot is listed:\n%s", ansi.Strip(m.Screen()))
	}
	tick := spinner.TickMsg{Time: now}
	nm, cmd := m.Update(tick)
	m = nm.(Model)
	if cmd == nil {
		t.Error("the spinner stopped before the first snapshot")
	}
	if l2, _ := screenLine(m, "listing"); l2 == l {
		t.Errorf("the spinner did not turn: %q", l2)
	}
	m = refreshNow(t, m)
	if _, y := screenLine(m, "listing"); y >= 0 {
		t.Error("the loading line stays after the first snapshot")
	}
	if _, cmd := m.Update(tick); cmd != nil {
		t.Error("the spinner still ticks after the first snapshot")
	}
}

// Issue 23 item 24: `:` jumps to a pane by name or alias (k9s :pods), and
// to a resource by name; tab completes; esc cancels; an unknown pane says
// so.
func TestCommandMode(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	m = press(m, ":")
	if l, _ := screenLine(m, "[name]"); !strings.Contains(l, ":overview|images") || !strings.Contains(l, "enter go") {
		t.Fatalf("`:` shows no command line:\n%s", ansi.Strip(m.Screen()))
	}
	m = press(m, "p", "o", "enter")
	if m.Active() != PaneContainers {
		t.Fatalf(":po went to pane %d, want Containers", m.Active())
	}
	m = press(m, ":", "i", "m", " ", "r", "e", "d", "i", "s", "enter")
	if m.Active() != PaneImages {
		t.Fatalf(":im redis went to pane %d", m.Active())
	}
	if l, _ := screenLine(m, "▌"); !strings.Contains(l, "redis") {
		t.Errorf(":im redis did not select redis: %q", l)
	}
	m = press(m, ":", "c", "g", "tab", "enter")
	if m.Active() != PaneCgroups {
		t.Errorf(":cg<tab> went to pane %d", m.Active())
	}
	m = press(m, ":", "e", "v", "esc")
	if m.Active() != PaneCgroups || m.capturing() {
		t.Errorf("esc did not cancel the command line")
	}
	m = press(m, ":", "z", "z", "enter")
	if !strings.Contains(m.flash, "no such pane") {
		t.Errorf("an unknown pane says %q", m.flash)
	}
	m = press(m, ":", "i", "m", "a", "g", "e", "s", " ", "n", "o", "p", "e", "enter")
	if !strings.Contains(m.flash, `nothing named "nope"`) {
		t.Errorf("an unknown name says %q", m.flash)
	}
}

// writeJournal writes journal lines (as the engine does, a rotated
// segment first) into a state dir.
func writeJournal(t *testing.T, dir, name string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// Issue 23 item 23: after a restart, Events lists the passes the journal
// holds (its rotated segment too), with their items; L opens the journal,
// which follows new lines.
func TestHistoryAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	t0 := fixedNow.Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	t1 := fixedNow.Add(-time.Hour + 2*time.Second).UTC().Format(time.RFC3339Nano)
	writeJournal(t, dir, "journal.jsonl.1",
		`{"time":"`+t0+`","op":"intent","pass":"run-a/3","passKind":"images","kind":"image","id":"sha256:aaaa1111aaaa1111","repoTags":["old/app:1"],"sizeBytes":1048576,"reason":"space"}`,
		`{"time":"`+t0+`","op":"started","pass":"run-a/3","passKind":"images","kind":"image","id":"sha256:aaaa1111aaaa1111","reason":"space"}`,
		`{"time":"`+t1+`","op":"removed","pass":"run-a/3","passKind":"images","kind":"image","id":"sha256:aaaa1111aaaa1111","repoTags":["old/app:1"],"sizeBytes":1048576,"reason":"space"}`,
		`{"time":"`+t1+`","op":"checkpoint","pass":"","passKind":"","kind":"","id":"","reason":""}`,
	)
	writeJournal(t, dir, "journal.jsonl",
		`{"time":"`+t1+`","op":"intent","pass":"run-b/1","passKind":"containers","kind":"container","id":"c0ffee00c0ffee00","name":"web","reason":"pod-removable"}`,
		`{"time":"`+t1+`","op":"failed","pass":"run-b/1","passKind":"containers","kind":"container","id":"c0ffee00c0ffee00","name":"web","reason":"pod-removable","error":"device busy"}`,
	)
	c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	now := fixedNow
	o := fixtureOptions(c, &now)
	o.Journal = func(context.Context) ([]engine.JournalEntry, error) { return engine.ReadJournalLines(dir) }
	m := New(o)
	m = send(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	m = refreshNow(t, m)
	m = runCmd(m, journalCmd(context.Background(), o.Journal))
	m = press(m, "5")
	s := ansi.Strip(m.Screen())
	if strings.Contains(s, "no pass has run yet") || passesListed(m) != 2 {
		t.Fatalf("Events does not list the journal's 2 passes (%d):\n%s", passesListed(m), s)
	}
	if l, _ := screenLine(m, "1 failed"); !strings.Contains(l, "containers") {
		t.Errorf("the failed pass of the last run is not listed: %q\n%s", l, s)
	}
	m = press(m, "G", "enter")
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "removed 1") || !strings.Contains(s, "old/app:1") || !strings.Contains(s, "run-a/3") {
		t.Errorf("the old pass's details lack its removal:\n%s", s)
	}
	m = press(m, "esc", "L")
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "old/app:1") || !strings.Contains(s, "device busy") || strings.Contains(s, "checkpoint") {
		t.Fatalf("the journal view lacks the journal's lines:\n%s", s)
	}
	writeJournal(t, dir, "journal.jsonl",
		`{"time":"`+t1+`","op":"removed","pass":"run-c/1","passKind":"images","kind":"image","id":"sha256:bbbb2222bbbb2222","repoTags":["new/app:2"],"sizeBytes":1048576,"reason":"space"}`)
	nm, cmd := m.Update(noticeMsg{n: engine.Notice{Progress: &engine.Progress{Kind: engine.PassImages}}, ok: true})
	m = nm.(Model)
	if cmd == nil {
		t.Fatal("a notice did not read the journal again")
	}
	m = runCmd(m, journalCmd(context.Background(), o.Journal))
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "new/app:2") || !strings.Contains(s, "following new lines") {
		t.Errorf("the journal view did not follow the new line:\n%s", s)
	}
}

var ctrlD = tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}

// openRemoveOne presses ctrl+d and waits for its preview.
func openRemoveOne(m Model) Model {
	nm, cmd := m.Update(ctrlD)
	return runCmd(nm.(Model), cmd)
}

// Issue 23 item 26: ctrl+d on an Images or Containers row previews the
// removal of that item alone, through the engine's plan; y applies it.
// What must stay is never offered: the preview says why.
func TestRemoveOneItem(t *testing.T) {
	m, c := fixtureModel(t, 120, 40)
	m = openRemoveOne(press(m, "2")) // alpine, pinned
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "alpine:3.20 stays: pinned") || !strings.Contains(s, "Nothing will be removed") {
		t.Fatalf("the pinned image's preview does not say why it stays:\n%s", s)
	}
	if m = press(m, "y"); len(c.appliedPlans()) != 0 {
		t.Fatalf("y on a kept item applied a plan")
	}
	m = openRemoveOne(press(m, "esc", "j")) // postgres, a candidate
	s := ansi.Strip(m.Screen())
	if !strings.Contains(s, "Remove image postgres:16 alone") || !strings.Contains(s, "IMAGES (1") || !strings.Contains(s, "TOTAL 1 item,") {
		t.Fatalf("ctrl+d does not preview the one image:\n%s", s)
	}
	m = press(m, "y")
	ap := c.appliedPlans()
	if len(ap) != 1 || len(ap[0].ImageGC.Remove) != 1 || !strings.Contains(strings.Join(ap[0].ImageGC.Remove[0].RepoTags, ","), "postgres") || len(ap[0].ContainerGC.Remove)+len(ap[0].SandboxGC.Remove)+len(ap[0].LogGC.Remove) != 0 {
		t.Fatalf("y applied %+v, want the one image postgres", ap)
	}
	// The sandbox image stays, whatever is asked.
	m = openRemoveOne(press(m, "2", "/", "p", "a", "u", "s", "e", "enter", "j"))
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "pause:3.9 stays: sandbox-image") {
		t.Fatalf("the pause image's preview does not say why it stays:\n%s", s)
	}
	// A pod row is not an item.
	m = press(m, "esc", "3")
	nm, _ := m.Update(ctrlD)
	if m = nm.(Model); m.ModalOpen() || !strings.Contains(m.flash, "select its row") {
		t.Errorf("ctrl+d on a pod row: modal %v, status %q", m.ModalOpen(), m.flash)
	}
	// A dead container of a live pod is kept by the per-container limit.
	m = openRemoveOne(press(m, "j"))
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "alone") && !strings.Contains(s, "stays:") {
		t.Errorf("ctrl+d on a dead container opens no preview:\n%s", s)
	}
}

// Issue 23 item 25: inside details, / searches (n for the next match, esc
// clears it first), and v shows the CRI object and nodegc's explanation
// row as JSON.
func TestDetailSearchAndRaw(t *testing.T) {
	m, _ := fixtureModel(t, 100, 20)
	m = press(m, "3", "enter") // a pod: more lines than fit
	m = press(m, "/", "c", "g", "r", "o", "u", "p", "enter")
	s := ansi.Strip(m.Screen())
	if !strings.Contains(s, "/cgroup: match 1 of") || !strings.Contains(s, "CGROUP") {
		t.Fatalf("/cgroup does not find the CGROUP section:\n%s", s)
	}
	m = press(m, "esc")
	if !m.ModalOpen() || strings.Contains(ansi.Strip(m.Screen()), "/cgroup:") {
		t.Fatalf("esc did not clear the search first")
	}
	m = press(m, "v")
	s = ansi.Strip(m.Screen())
	if !strings.Contains(s, `"sandboxes": [`) || !strings.Contains(s, "v details") {
		t.Fatalf("v shows no raw JSON:\n%s", s)
	}
	m = press(m, "esc", "2", "j", "enter", "v", "/", "e", "x", "p", "l", "a", "n", "enter")
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, `"explanation": {`) || !strings.Contains(s, `"repoTags"`) {
		t.Errorf("an image's raw view lacks the CRI object or the explanation row:\n%s", s)
	}
}
