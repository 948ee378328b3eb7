package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
)

// The opening frame is the dashboard's own chrome: the same tabs and the
// same help line as the running dashboard's first frame at that size (so
// nothing jumps when it draws over it), in the alternate screen with the
// cursor hidden, and it says what it waits for.
func TestOpeningFrameIsTheDashboards(t *testing.T) {
	const w, h = 120, 36
	const note = "connecting to the agent through /var/lib/nodegc/control.sock"
	for _, readOnly := range []bool{false, true} {
		now := fixedNow
		o := fixtureOptions(newFakeController(fixtureSnapshot(), engine.DefaultPolicy()), &now)
		o.ReadOnly = readOnly
		raw := string(openingFrame(Options{ReadOnly: readOnly, RefreshInterval: o.RefreshInterval, Version: o.Version}, note, w, h, colorprofile.Ascii))
		if start := ansi.SetModeAltScreenSaveCursor + ansi.HideCursor; !strings.HasPrefix(raw, start) {
			t.Fatalf("read-only %v: the frame starts %q, not in the alternate screen with the cursor hidden", readOnly, raw[:min(len(raw), 40)])
		}
		got := strings.Split(ansi.Strip(raw), "\r\n")
		if len(got) != h {
			t.Fatalf("read-only %v: %d lines, want %d", readOnly, len(got), h)
		}
		m, _ := New(o).Update(tea.WindowSizeMsg{Width: w, Height: h})
		want := strings.Split(ansi.Strip(m.(Model).Screen()), "\n")
		tabs := func(l string) string { return strings.TrimSpace(l[:strings.Index(l, "refresh")]) }
		if tabs(got[0]) != tabs(want[0]) || !strings.Contains(got[0], "Overview") {
			t.Errorf("read-only %v: tab bar\n%q\nthe dashboard's\n%q", readOnly, got[0], want[0])
		}
		if got[h-1] != want[h-1] {
			t.Errorf("read-only %v: help line\n%q\nthe dashboard's\n%q", readOnly, got[h-1], want[h-1])
		}
		if !strings.Contains(strings.Join(got, "\n"), note+"…") {
			t.Errorf("read-only %v: the frame does not say what it waits for:\n%s", readOnly, strings.Join(got, "\n"))
		}
	}
}

// Close leaves the alternate screen the opening frame entered, once, and
// only when the dashboard drawn over it (which writes through it) has not
// left it itself.
func TestOpeningClose(t *testing.T) {
	leave := ansi.ShowCursor + ansi.ResetModeAltScreenSaveCursor
	for _, tc := range []struct {
		name   string
		writes []string // what the dashboard wrote through the opening
		want   string   // what Close writes after them
	}{
		{"the dashboard never ran", nil, leave},
		{"the dashboard was killed before its first frame", []string{"\x1b[?2026$p"}, leave},
		{"the dashboard did not let go after its first frame", []string{"\x1b[?2026$p", ansi.SetModeAltScreenSaveCursor + "frame"}, leave},
		{"the dashboard ended", []string{ansi.SetModeAltScreenSaveCursor + "frame", "last frame" + ansi.ResetModeAltScreenSaveCursor + ansi.ShowCursor}, ""},
		{"the dashboard was suspended and resumed", []string{ansi.SetModeAltScreenSaveCursor + "frame", ansi.ResetModeAltScreenSaveCursor, ansi.SetModeAltScreenSaveCursor + "frame"}, leave},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tty")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			op := &Opening{out: f, alt: true}
			out := op.output()
			for _, s := range tc.writes {
				if _, err := out.Write([]byte(s)); err != nil {
					t.Fatal(err)
				}
			}
			op.Close()
			op.Close()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimPrefix(string(b), strings.Join(tc.writes, "")); got != tc.want {
				t.Errorf("Close wrote %q, want %q", got, tc.want)
			}
		})
	}
	var op *Opening
	op.Close() // a nil Opening (no terminal) does nothing
	if Open(nil, Options{}, "x") != nil {
		t.Error("Open drew on no terminal")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if Open(f, Options{RefreshInterval: time.Second}, "x") != nil {
		t.Error("Open drew on a file that is not a terminal")
	}
}
