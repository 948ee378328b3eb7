package tui

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"

	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Opening is the dashboard's first frame, drawn on the terminal the
// moment the process knows it opens a dashboard, before it asks anything
// of the agent or the runtime: the tab bar, the help line and, where the
// body's spinner turns later, what the dashboard is waiting for. Bubble
// Tea v2.0.10 writes a frame only on its renderer's ticker, a whole
// 1/FPS after Run (100 ms at the dashboard's 10 frames a second), and has
// no way to write the first one at once; an attaching dashboard also
// waits for the agent's status before it can run, and the agent may be
// busy (issue 24: a dashboard attaching shows its first frame within
// 200 ms).
//
// The frame is drawn in the alternate screen, as the dashboard's are.
// Run, given the Opening in Options, draws over it (Bubble Tea enters the
// alternate screen again, which a terminal already there ignores, and
// clears it) and leaves the alternate screen when it ends. Close leaves it
// when nothing did: the process ends before its dashboard ran, or the
// dashboard was killed before its first frame.
//
// A nil *Opening is valid and does nothing.
type Opening struct {
	out *os.File

	mu sync.Mutex
	// alt is whether the terminal is in the alternate screen, as the
	// writes through the Opening left it.
	alt bool
}

// Open draws the opening frame on out and returns it, or returns nil when
// out is not a terminal. o is what the dashboard will show as far as it
// is known yet (ReadOnly, RefreshInterval, Version); note says what it is
// waiting for ("connecting to the agent through …").
func Open(out *os.File, o Options, note string) *Opening {
	if out == nil || !term.IsTerminal(out.Fd()) {
		return nil
	}
	w, h, err := term.GetSize(out.Fd())
	if err != nil || w <= 0 || h <= 0 {
		return nil
	}
	op := &Opening{out: out}
	if _, err := out.Write(openingFrame(o, note, w, h, lipgloss.Writer.Profile)); err == nil {
		op.alt = true
	}
	return op
}

// openingFrame is what Open writes on a w×h terminal of the colour
// profile: into the alternate screen, the cursor hidden, the screen
// cleared, and the opening model's screen, its colours in profile.
func openingFrame(o Options, note string, w, h int, profile colorprofile.Profile) []byte {
	var b bytes.Buffer
	b.WriteString(ansi.SetModeAltScreenSaveCursor + ansi.HideCursor + ansi.CursorHomePosition + ansi.EraseEntireScreen)
	screen := openingModel(o, note, w, h).Screen()
	// The terminal is not in raw mode yet: "\r\n" moves to the start of
	// the next line whatever its output flags say.
	cw := &colorprofile.Writer{Forward: &b, Profile: profile}
	if profile <= colorprofile.NoTTY {
		cw.Profile = colorprofile.Ascii // keep the layout, drop the colours; the sequences above stay
	}
	_, _ = io.WriteString(cw, strings.ReplaceAll(screen, "\n", "\r\n"))
	return b.Bytes()
}

// openingModel is the dashboard's model as it opens: no snapshot, no
// controller yet (but not read-only for that: the keys and help are those
// the dashboard will have), w×h, and note in place of the body's spinner.
func openingModel(o Options, note string, w, h int) Model {
	readOnly := o.ReadOnly
	o = o.withDefaults()
	o.ReadOnly = readOnly
	k := keys.Default(o.ReadOnly)
	m := newModel(o, k, defaultPanes(o, k, style.Default(true))...)
	m.opening = note
	m.width, m.height = w, h
	m.resize()
	return m
}

// output is the writer Run gives Bubble Tea: the terminal, with the
// alternate screen followed.
func (op *Opening) output() *openingOutput { return &openingOutput{File: op.out, op: op} }

// Close leaves the alternate screen, showing the cursor again, unless the
// dashboard drawn over the opening frame has left it. It may be called
// more than once.
func (op *Opening) Close() {
	if op == nil {
		return
	}
	op.mu.Lock()
	alt := op.alt
	op.alt = false
	op.mu.Unlock()
	if alt {
		_, _ = op.out.WriteString(ansi.ShowCursor + ansi.ResetModeAltScreenSaveCursor)
	}
}

// openingOutput is the terminal as Bubble Tea's output (a term.File, so
// Bubble Tea sees the terminal it is): each write is passed on, and the
// last switch of the alternate screen in it is noted.
type openingOutput struct {
	*os.File
	op *Opening
}

// Write writes p to the terminal.
// The lock is not held while writing: a terminal that blocks (a
// stopped SSH session) must not keep Close waiting.
func (w *openingOutput) Write(p []byte) (int, error) {
	on := bytes.LastIndex(p, []byte(ansi.SetModeAltScreenSaveCursor))
	off := bytes.LastIndex(p, []byte(ansi.ResetModeAltScreenSaveCursor))
	if on != off {
		w.op.mu.Lock()
		w.op.alt = on > off
		w.op.mu.Unlock()
	}
	return w.File.Write(p)
}
