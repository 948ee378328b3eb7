package tui

import (
	"bytes"
	"errors"
	"image/color"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/nodegc/nodegc/engine"
)

func press(m Model, keys ...string) Model {
	for _, k := range keys {
		nm, cmd := m.Update(keyMsg(k))
		m = runCmd(nm.(Model), cmd)
	}
	return m
}

func TestPreviewAndApply(t *testing.T) {
	tests := []struct {
		name        string
		keys        []string
		wantPreview engine.PassKind
		wantApplied bool
		// wantOpen: the modal is still shown after the keys.
		wantOpen bool
	}{
		{"dry-run then y applies exactly the previewed plan", []string{"D", "y"}, engine.PassFull, true, false},
		{"dry-run then enter applies nothing and closes the preview", []string{"D", "enter"}, engine.PassFull, false, false},
		{"dry-run then enter then y applies nothing: enter closed the preview", []string{"D", "enter", "y"}, engine.PassFull, false, false},
		{"dry-run then esc removes nothing", []string{"D", "esc"}, engine.PassFull, false, false},
		{"scrolling the preview applies nothing", []string{"D", "down", "down"}, engine.PassFull, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, c := fixtureModel(t, 100, 30)
			m = press(m, tt.keys...)
			prev := c.previewedPlans()
			if len(prev) != 1 || prev[0].Pass != tt.wantPreview {
				t.Fatalf("previews = %v, want one %s preview", c.previews, tt.wantPreview)
			}
			if m.ModalOpen() != tt.wantOpen {
				t.Errorf("modal open = %v, want %v", m.ModalOpen(), tt.wantOpen)
			}
			applied := c.appliedPlans()
			if !tt.wantApplied {
				if len(applied) != 0 {
					t.Fatalf("applied %d plans, want none", len(applied))
				}
				return
			}
			if len(applied) != 1 {
				t.Fatalf("applied %d plans, want 1", len(applied))
			}
			if !reflect.DeepEqual(applied[0], prev[0]) {
				t.Errorf("applied plan differs from the previewed one:\napplied %+v\npreview %+v", applied[0], prev[0])
			}
			if got := passesListed(m); got != 1 {
				t.Errorf("events pane has %d passes, want the applied one", got)
			}
		})
	}
}

// The force keys run what their help says, a forced pass of the kind
// (Controller.Force), after a confirm that shows what it would remove as
// of the shown refresh; they preview nothing and apply no plan.
func TestForceKeysForceAPass(t *testing.T) {
	tests := []struct {
		name       string
		keys       []string
		wantForced []engine.PassKind
	}{
		{"image GC asks first and forces an image pass on y", []string{"i", "y"}, []engine.PassKind{engine.PassImages}},
		{"image GC then enter runs nothing", []string{"i", "enter"}, nil},
		{"container GC cancelled with n runs nothing", []string{"x", "n"}, nil},
		{"container GC forces a container pass on y", []string{"x", "y"}, []engine.PassKind{engine.PassContainers}},
		{"container GC then enter runs nothing", []string{"x", "enter"}, nil},
		{"reclaim all forces a reclaim pass on y", []string{"R", "y"}, []engine.PassKind{engine.PassReclaimAll}},
		{"reclaim all then enter runs nothing", []string{"R", "enter"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, c := fixtureModel(t, 100, 30)
			m = press(m, tt.keys...)
			if len(c.previewedPlans()) != 0 {
				t.Errorf("previews = %v, want none", c.previews)
			}
			c.mu.Lock()
			forced := slices.Clone(c.forced)
			c.mu.Unlock()
			if !slices.Equal(forced, tt.wantForced) {
				t.Fatalf("forced %v, want %v", forced, tt.wantForced)
			}
			if m.ModalOpen() {
				t.Error("the modal is still open")
			}
			if want := len(tt.wantForced); passesListed(m) != want {
				t.Errorf("events pane has %d passes, want %d", passesListed(m), want)
			}
		})
	}
}

// The force modal lists what the pass would remove as of the shown
// refresh, as planned with the engine's policy.
func TestForceModalListsThePlan(t *testing.T) {
	m, c := fixtureModel(t, 100, 60)
	m = press(m, "i")
	want := engine.PlanPass(c.snap, c.policy, engine.PassImages, fixedNow)
	if len(want.ImageGC.Remove) == 0 {
		t.Fatal("the fixture's image plan removes nothing")
	}
	s := ansi.Strip(m.Screen())
	for _, r := range want.ImageGC.Remove {
		if !strings.Contains(s, r.RepoTags[0]) {
			t.Errorf("the force modal does not list %s:\n%s", r.RepoTags[0], s)
		}
	}
}

// TestViewOnlyModalsCloseOnEnter checks that enter closes the modals that
// have nothing to apply, as it closes the others, and applies nothing.
func TestViewOnlyModalsCloseOnEnter(t *testing.T) {
	tests := []struct {
		name     string
		ctrl     func() *fakeController
		wantText string
	}{
		{"a preview with nothing to remove closes on enter", func() *fakeController {
			return newFakeController(engine.Snapshot{TakenAt: fixedNow}, engine.DefaultPolicy())
		}, "nothing to remove"},
		{"a failed preview closes on enter", func() *fakeController {
			c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
			c.previewErr = errors.New("runtime down")
			return c
		}, "preview failed: runtime down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.ctrl()
			now := fixedNow
			m := send(New(fixtureOptions(c, &now)), tea.WindowSizeMsg{Width: 100, Height: 30})
			m = refreshNow(t, m)
			m = press(m, "D")
			s := ansi.Strip(m.Screen())
			if !strings.Contains(s, tt.wantText) || !strings.Contains(s, "esc/enter close") {
				t.Fatalf("modal lacks %q and its close keys:\n%s", tt.wantText, s)
			}
			m = press(m, "enter")
			if m.ModalOpen() {
				t.Error("enter did not close the modal")
			}
			if n := len(c.appliedPlans()); n != 0 {
				t.Errorf("applied %d plans, want none", n)
			}
		})
	}
}

// TestConfirmFooterNamesOnlyY checks that the footer of an applicable plan
// offers y, not enter, to apply it.
func TestConfirmFooterNamesOnlyY(t *testing.T) {
	for k, want := range map[string]string{"D": "y apply exactly this plan · esc cancel",
		"i": "y run the pass now (it plans again as it starts) · esc cancel",
		"x": "y run the pass now (it plans again as it starts) · esc cancel",
		"R": "y run the pass now (it plans again as it starts) · esc cancel"} {
		t.Run(k+" offers y and esc cancel, never enter", func(t *testing.T) {
			m, _ := fixtureModel(t, 100, 30)
			s := ansi.Strip(press(m, k).Screen())
			if !strings.Contains(s, want) {
				t.Errorf("footer does not offer %q:\n%s", want, s)
			}
			if strings.Contains(s, "enter/y") {
				t.Errorf("footer still offers enter to apply:\n%s", s)
			}
		})
	}
}

func TestPreviewListsEveryItem(t *testing.T) {
	m, c := fixtureModel(t, 100, 60)
	m = press(m, "D")
	p := c.previewedPlans()[0]
	screen := ansi.Strip(m.Screen())
	for _, r := range p.ImageGC.Remove {
		if !strings.Contains(screen, strings.TrimPrefix(r.RepoTags[0], "")) {
			t.Errorf("preview does not list image %s", r.RepoTags[0])
		}
	}
	for _, r := range p.ContainerGC.Remove {
		if !strings.Contains(screen, r.ID) {
			t.Errorf("preview does not list container %s", r.ID)
		}
	}
	if !strings.Contains(screen, "TOTAL 7 items") {
		t.Errorf("preview has no totals:\n%s", screen)
	}
}

func TestLatePreviewAfterCancelIsDropped(t *testing.T) {
	m, c := fixtureModel(t, 100, 30)
	nm, cmd := m.Update(keyMsg("D"))
	m = nm.(Model)
	m = press(m, "esc")
	m = runCmd(m, cmd) // the preview arrives after esc
	if m.ModalOpen() {
		t.Fatal("a preview that arrived after esc reopened the modal")
	}
	m = press(m, "y")
	if n := len(c.appliedPlans()); n != 0 {
		t.Errorf("applied %d plans after cancel, want none", n)
	}
}

func TestReadOnly(t *testing.T) {
	c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	now := fixedNow
	o := fixtureOptions(c, &now)
	o.ReadOnly = true
	m := send(New(o), tea.WindowSizeMsg{Width: 100, Height: 30})
	m = refreshNow(t, m)

	t.Run("destructive keys open nothing", func(t *testing.T) {
		m := press(m, "i", "x", "R")
		if m.ModalOpen() || len(c.previewedPlans()) != 0 {
			t.Fatalf("i/x/R in read-only mode previewed %v", c.previews)
		}
		if s := ansi.Strip(m.Screen()); !strings.Contains(s, "read-only: i, x and R are disabled") {
			t.Errorf("no read-only notice after i:\n%s", s)
		}
	})
	t.Run("the footer says read-only where the keys would be", func(t *testing.T) {
		s := ansi.Strip(m.Screen())
		foot := s[strings.LastIndex(s, "\n")+1:]
		if !strings.Contains(foot, "i/x/R read-only") || strings.Contains(foot, "image GC") {
			t.Errorf("footer = %q", foot)
		}
	})
	t.Run("no countdown to passes that never run, and no pause key", func(t *testing.T) {
		s := ansi.Strip(m.Screen())
		if !strings.Contains(s, "read-only: no passes") || strings.Contains(s, "next passes") || strings.Contains(s, "pause/resume") {
			t.Errorf("read-only overview:\n%s", s)
		}
		if mm := press(m, "p"); c.Status().Paused || strings.Contains(mm.flash, "paus") {
			t.Errorf("p in read-only mode: %q", mm.flash)
		}
	})
	t.Run("a dry-run shows the plan but cannot apply it", func(t *testing.T) {
		m := press(m, "D")
		if s := ansi.Strip(m.Screen()); !strings.Contains(s, "read-only: this plan cannot be applied") {
			t.Errorf("preview does not say read-only:\n%s", s)
		}
		press(m, "y", "enter")
		if n := len(c.appliedPlans()); n != 0 {
			t.Errorf("read-only mode applied %d plans", n)
		}
	})
}

func TestPauseResume(t *testing.T) {
	m, c := fixtureModel(t, 100, 30)
	m = press(m, "p")
	if !c.Status().Paused {
		t.Fatal("p did not pause the scheduler")
	}
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "Ⅱ paused") || !strings.Contains(s, "periodic passes paused") {
		t.Errorf("paused state not shown:\n%s", s)
	}
	m = press(m, "p")
	if c.Status().Paused {
		t.Error("second p did not resume")
	}
}

func TestFreezeStopsRefresh(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	m = press(m, "f")
	seq := m.refreshSeq
	nm, cmd := m.Update(tickMsg{})
	m = nm.(Model)
	_ = cmd
	if m.refreshSeq != seq {
		t.Errorf("a tick started a refresh while frozen")
	}
	m = press(m, "f")
	if m.refreshSeq == seq {
		t.Errorf("unfreezing did not refresh")
	}
}

func TestQuitAsksWhileAPassIsInFlight(t *testing.T) {
	m, c := fixtureModel(t, 100, 30)
	m = press(m, "D")
	nm, cmd := m.Update(keyMsg("y")) // apply starts; its result is not fed back
	m = nm.(Model)
	if cmd == nil {
		t.Fatal("confirm returned no command")
	}
	nm, quit := m.Update(keyMsg("q"))
	m = nm.(Model)
	if quit != nil || !m.ModalOpen() {
		t.Fatal("q quit while a pass was in flight, without asking")
	}
	m = press(m, "n")
	if m.ModalOpen() {
		t.Error("n did not close the quit question")
	}
	_ = c
}

func TestWindowSizes(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {100, 30}, {200, 60}} {
		m, _ := fixtureModel(t, sz[0], sz[1])
		for _, p := range []string{"1", "2", "3", "4", "5", "D"} {
			m = press(m, p)
			lines := strings.Split(ansi.Strip(m.Screen()), "\n")
			if len(lines) != sz[1] {
				t.Errorf("%dx%d pane %s: %d lines", sz[0], sz[1], p, len(lines))
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > sz[0] {
					t.Errorf("%dx%d pane %s line %d is %d wide: %q", sz[0], sz[1], p, i, w, l)
				}
			}
		}
	}
}

// TestProgramDryRunApply drives the real program: d opens the preview, y
// applies it, and the controller got exactly the previewed plan.
func TestProgramDryRunApply(t *testing.T) {
	c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	now := fixedNow
	o := fixtureOptions(c, &now)
	o.RefreshInterval = time.Hour
	tm := teatest.NewTestModel(t, New(o), teatest.WithInitialTermSize(100, 30),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	waitFor(t, tm.Output(), "IMAGE FILESYSTEM")
	tm.Type("D")
	waitFor(t, tm.Output(), "apply exactly this plan")
	tm.Type("y")
	waitFor(t, tm.Output(), "pass #1")
	tm.Type("q")
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(programWait)).(Model)
	applied, prev := c.appliedPlans(), c.previewedPlans()
	if len(applied) != 1 || !reflect.DeepEqual(applied[0], prev[0]) {
		t.Fatalf("applied %d plans, want exactly the one previewed", len(applied))
	}
	if passesListed(fm) != 1 {
		t.Errorf("final model has %d passes", passesListed(fm))
	}
}

// programWait bounds each wait on the real program (a screen to show, the
// program to end): generous, since a starved -race run took over 3 s to
// draw the first frame or the preview; only a hang reaches it.
const programWait = time.Minute

func waitFor(t *testing.T, r io.Reader, s string) {
	t.Helper()
	teatest.WaitFor(t, r, func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
		teatest.WithDuration(programWait), teatest.WithCheckInterval(10*time.Millisecond))
}

func TestBackgroundColourSwitchesPalette(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	if !m.st.Dark {
		t.Fatal("the default palette is not the dark one")
	}
	m = send(m, tea.BackgroundColorMsg{Color: color.White})
	if m.st.Dark {
		t.Error("a white background kept the dark palette")
	}
}

func TestImageStatusReasons(t *testing.T) {
	m, _ := fixtureModel(t, 120, 40)
	s := ansi.Strip(press(m, "2").Screen())
	for _, want := range []string{
		"keep too-young", "eligible in 1m10s", "keep pinned", "in use by default/web-7d9f", "remove #1 space", "── cut line:",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("images pane lacks %q:\n%s", want, s)
		}
	}
	if strings.Index(s, "remove #3 space") > strings.Index(s, "cut line") {
		t.Errorf("the last removal is drawn below the cut line:\n%s", s)
	}
}

// TestKeysAsK9s pins the keys a k9s user presses without reading the help:
// d describes the selected row (k9s d, enter here too), y shows its raw
// object (k9s y, YAML), and neither previews nor removes anything; the dry
// run is D, and inside its preview y is the yes of its y/n question.
func TestKeysAsK9s(t *testing.T) {
	t.Run("d on an Images row opens that image's details and previews nothing", func(t *testing.T) {
		m, c := fixtureModel(t, 100, 30)
		m = press(m, "2", "j", "d")
		if m.modal == nil || m.modal.kind != modalDetail || !strings.Contains(m.modal.title, "postgres:16") {
			t.Fatalf("d did not describe the selected image:\n%s", ansi.Strip(m.Screen()))
		}
		if n := len(c.previewedPlans()); n != 0 {
			t.Errorf("d previewed %d plans, want none", n)
		}
	})
	t.Run("y on a row opens its raw object, applies nothing", func(t *testing.T) {
		m, c := fixtureModel(t, 100, 30)
		m = press(m, "2", "j", "y")
		if m.modal == nil || m.modal.kind != modalDetail || !m.modal.search.rawOn {
			t.Fatalf("y did not open the raw object:\n%s", ansi.Strip(m.Screen()))
		}
		if s := ansi.Strip(m.Screen()); !strings.Contains(s, "postgres:16") || !strings.Contains(s, "{") {
			t.Errorf("raw view lacks the image:\n%s", s)
		}
		if n := len(c.appliedPlans()); n != 0 {
			t.Errorf("y on a row applied %d plans", n)
		}
	})
	t.Run("D previews a full pass and y there applies exactly it", func(t *testing.T) {
		m, c := fixtureModel(t, 100, 30)
		m = press(m, "D")
		if m.modal == nil || m.modal.kind != modalPreview {
			t.Fatalf("D did not open the dry-run preview:\n%s", ansi.Strip(m.Screen()))
		}
		m = press(m, "y")
		if got := c.appliedPlans(); len(got) != 1 || len(got[0].ImageGC.Remove) != len(c.previewedPlans()[0].ImageGC.Remove) {
			t.Errorf("y in the preview applied %d plans, want the previewed one", len(got))
		}
	})
	t.Run("esc closes the help, as k9s's", func(t *testing.T) {
		m, _ := fixtureModel(t, 100, 30)
		m = press(m, "2", "?", "esc")
		if s := ansi.Strip(m.Screen()); strings.Contains(s, "NAVIGATION") || !strings.Contains(s, "postgres:16") {
			t.Errorf("esc did not close the help:\n%s", s)
		}
	})
	t.Run("the help says d describes, D is the dry run and y is a preview's yes", func(t *testing.T) {
		m, _ := fixtureModel(t, 120, 36)
		s := ansi.Strip(press(m, "2", "?").Screen())
		for _, want := range []string{"enter/d", "D", "dry-run", "v/y", "raw JSON", "yes, apply", "k9s habits"} {
			if !strings.Contains(s, want) {
				t.Errorf("help lacks %q:\n%s", want, s)
			}
		}
	})
}
