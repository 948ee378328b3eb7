package tui

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// longNamesSnapshot is the fixture node with references as long as real
// registries give them.
func longNamesSnapshot() engine.Snapshot {
	s := fixtureSnapshot()
	s.Images[4].RepoTags = []string{"ghcr.io/acme/platform/observability/node-exporter-extended:v1.8.0-rc.3"}
	s.Images[5].RepoTags = []string{"docker.io/nodegc/fixture-workload-postgres-replica:16.4-bookworm"}
	s.Images[6].RepoTags = []string{"registry.example.internal:5000/acme/batch/report-generator:2024.11.07"}
	return s
}

// longNamesModel is the dashboard over longNamesSnapshot at w×h.
func longNamesModel(t *testing.T, w, h int) Model { return modelOver(t, longNamesSnapshot(), w, h) }

// modelOver is the dashboard over snap at w×h, after two refreshes two
// seconds apart.
func modelOver(t *testing.T, snap engine.Snapshot, w, h int) Model {
	t.Helper()
	c := newFakeController(snap, engine.DefaultPolicy())
	now := fixedNow.Add(-2 * time.Second)
	o := fixtureOptions(c, &now)
	o.Snapshot = func(context.Context) (engine.Snapshot, error) { return snap, nil }
	m := send(New(o), windowSize(w, h))
	m = refreshNow(t, m)
	now = fixedNow
	return refreshNow(t, m)
}

// cutBesideBlank finds a cut (…) followed by blank cells on the same
// row: the text was cut where there was room for it. Box borders count as
// the row's end.
var cutBesideBlank = regexp.MustCompile(`…( {3,}| +[│|]?$)`)

// Issue 23 items 3, 4, 7 and 17: no header, reason, reference or summary
// is cut where spare cells exist on the same row, on any pane or modal, at
// 80, 120, 160 and 220 columns.
func TestNoCutBesideBlankSpace(t *testing.T) {
	screens := []struct {
		name string
		keys []string
	}{
		{"overview", nil},
		{"images", []string{"2"}},
		{"images by size", []string{"2", "s"}},
		{"images by last used", []string{"2", "s", "s"}},
		{"images by name", []string{"2", "s", "s", "s"}},
		{"containers", []string{"3"}},
		{"containers by dead count", []string{"3", "s"}},
		{"containers by removals", []string{"3", "s", "s"}},
		{"cgroups", []string{"4", "down", "down", "down", "down", "enter"}},
		{"cgroups sorted", []string{"4", "s"}},
		{"events", []string{"i", "y", "5"}},
		{"dry-run preview", []string{"D"}},
		{"reclaim preview", []string{"R"}},
		{"full help", []string{"2", "?"}},
		{"image detail", []string{"2", "j", "enter"}},
		{"pod detail", []string{"3", "enter"}},
		{"pass detail", []string{"i", "y", "5", "enter"}},
	}
	for _, size := range [][2]int{{80, 24}, {120, 40}, {160, 48}, {220, 60}} {
		for _, sc := range screens {
			t.Run(fmt.Sprintf("%s at %dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				m := press(longNamesModel(t, size[0], size[1]), sc.keys...)
				for i, l := range strings.Split(screen(m), "\n") {
					if cutBesideBlank.MatchString(l) {
						t.Errorf("line %d cut beside blank cells:\n%q", i, l)
					}
				}
			})
		}
	}
}

// Issue 23 item 3: every sort order shows its header whole, with its
// arrow.
func TestSortArrowKeepsHeaderName(t *testing.T) {
	for _, w := range []int{80, 100, 160} {
		m := press(longNamesModel(t, w, 30), "2")
		for _, want := range []string{"#▲", "SIZE▼", "LAST USED▼", "IMAGE▲"} {
			m = press(m, "s")
			if want == "#▲" {
				m = press(m, "s", "s", "s") // back to rank
			}
			if hdr := lineWith(screen(m), "STATUS"); !strings.Contains(hdr, want) {
				t.Errorf("at %d columns the header %q lacks %q", w, hdr, want)
			}
		}
	}
}

// Issue 23 item 7: the Containers pane says its order whole at every
// width, and the two count orders look different.
func TestContainersSortIsSaid(t *testing.T) {
	for _, w := range []int{80, 120, 160} {
		m := press(longNamesModel(t, w, 30), "3")
		headers := map[string]string{}
		for _, order := range []string{"dead count", "removals"} {
			m = press(m, "s")
			s := screen(m)
			if !strings.Contains(s, "sort: "+order) {
				t.Errorf("at %d columns, sorted by %s, the pane does not say so:\n%s", w, order, s)
			}
			headers[order] = lineWith(s, "ATTEMPT")
		}
		if headers["dead count"] == headers["removals"] {
			t.Errorf("at %d columns both count orders show the same header %q", w, headers["removals"])
		}
	}
}

// Issue 23 item 6: the Images filter matches the full reference, though
// the column shows Docker Hub's official images without their registry.
func TestImagesFilterMatchesFullReference(t *testing.T) {
	m := press(longNamesModel(t, 120, 30), "2", "/")
	for _, r := range "docker.io/library/redis" {
		m = press(m, string(r))
	}
	m = press(m, "enter")
	if s := screen(m); !strings.Contains(s, "1/10 match") || !strings.Contains(s, "redis:7.2") {
		t.Errorf("filter docker.io/library/redis:\n%s\nwant 1/10 match, redis:7.2", s)
	}
}

// Issue 23 item 29: while a filter is typed, the footer shows the
// filter's keys, not the global ones (q and ? go to the filter).
func TestFooterWhileTypingAFilter(t *testing.T) {
	m := press(longNamesModel(t, 120, 30), "2", "/")
	lines := strings.Split(screen(m), "\n")
	foot := lines[len(lines)-1]
	for _, want := range []string{"enter keep filter", "esc clear filter", "backspace delete", "ctrl+u erase filter"} {
		if !strings.Contains(foot, want) {
			t.Errorf("footer %q lacks %q", foot, want)
		}
	}
	if strings.Contains(foot, "q quit") {
		t.Errorf("footer %q offers q quit while q types into the filter", foot)
	}
}

// Issue 23 item 31: with periodic passes on, the first frame says, before
// the first pass, when they start deleting and which key pauses them.
func TestFirstFrameSaysWhenDeletingStarts(t *testing.T) {
	c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	c.status.Passes = 0
	now := fixedNow
	m := send(New(fixtureOptions(c, &now)), windowSize(120, 30)) // no snapshot yet
	line := lineWith(screen(m), "will delete")
	for _, want := range []string{"container GC in 40s", "image GC in 3m10s", "p pauses", "D previews"} {
		if !strings.Contains(line, want) {
			t.Errorf("first frame's warning %q lacks %q:\n%s", line, want, screen(m))
		}
	}
	if s := screen(press(m, "p")); strings.Contains(s, "will delete") {
		t.Errorf("paused, the dashboard still warns of deletion:\n%s", s)
	}
}

// Issue 23 item 14: a root filesystem whose used/capacity (df) differs
// from the kubelet's percent (capacity − available) says which the gauge
// shows.
func TestFilesystemPercentIsLabelled(t *testing.T) {
	snap := fixtureSnapshot()
	snap.RootFs.CapacityBytes, snap.RootFs.UsedBytes, snap.RootFs.AvailableBytes = 252*gib, 17*gib+512*mib, 73*gib+614*mib
	s := screen(modelOver(t, snap, 220, 50))
	if !strings.Contains(s, "71%") || !strings.Contains(s, "gauge 71% = capacity − available") || !strings.Contains(s, "df used/capacity 6%") {
		t.Errorf("Overview:\n%s\nwant the 71%% gauge labelled as capacity − available beside df's 6%%", s)
	}
}

// Issue 23 item 15: a node without image records says on the dashboard
// that every image counts as first seen now, and when the first become
// eligible.
func TestNoRecordsSaysFirstSeenNow(t *testing.T) {
	snap := fixtureSnapshot()
	snap.ImageRecords = nil
	s := screen(modelOver(t, snap, 160, 40))
	if !strings.Contains(s, "every image counts as first seen at 12:00:00; none goes before 12:02:00 (in 2m)") {
		t.Errorf("Overview:\n%s\nwant every image first seen at 12:00:00, eligible in 2m", s)
	}
}
