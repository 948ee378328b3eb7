package overview

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// TestOverviewSaysWhatOthersRemoved pins issue 39 items 1 and 2 on the
// dashboard: the Overview says what others removed, from the scheduler's
// status (since start and since the last pass), and in shadow mode what
// the shadow passes would have removed against it; the engine line says
// the agent removes nothing.
func TestOverviewSaysWhatOthersRemoved(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	st := engine.Status{
		RemovedByOthers: engine.RemovedByOthers{Images: 4, Containers: 7, ImageBytes: 3 << 30, LastPassImages: 1, LastPassContainers: 2},
	}
	view := func(st engine.Status) string {
		m := New(keys.Default(false), style.Default(true))
		m.SetSize(200, 60)
		m, _ = m.Update(feed.State{Controlled: true, Status: st, Now: at, At: at})
		return ansi.Strip(m.View())
	}
	v := view(st)
	for _, want := range []string{"BY OTHERS", "removed 4 images (3.0 GiB), 7 dead containers since start", "· 1 images, 2 containers since the last pass"} {
		if !strings.Contains(v, want) {
			t.Errorf("the Overview does not say %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "SHADOW") {
		t.Errorf("the Overview of an agent that removes shows a shadow line:\n%s", v)
	}

	st.Shadow, st.ReadOnly, st.Passes = true, true, 9
	st.ShadowTally = engine.ShadowTally{Passes: 9,
		Images:     engine.ShadowCounts{Agreed: 3, NodegcOnly: 1, OtherOnly: 1},
		Containers: engine.ShadowCounts{Agreed: 5, OtherOnly: 2}}
	st.LastReport = &engine.PassReport{Kind: engine.PassImages, DryRun: true, Shadow: true, FinishedAt: at, EstimatedBytesFreed: 2 << 30,
		Items: []engine.ItemResult{{Kind: engine.ItemImage, ID: "a", Outcome: engine.OutcomePlanned}, {Kind: engine.ItemImage, ID: "b", Outcome: engine.OutcomePlanned}}}
	v = view(st)
	for _, want := range []string{"shadow: plans every pass, removes nothing",
		"SHADOW  would have removed 9, others removed 11, agreed 8",
		"images 3/1/1, containers 5/0/2 (agreed/nodegc only/others only) over 9 passes",
		"shadow images", "would remove 2 images (2.0 GiB), 0 containers; removed nothing"} {
		if !strings.Contains(v, want) {
			t.Errorf("the Overview in shadow mode does not say %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "read-only") {
		t.Errorf("the Overview in shadow mode says read-only, not shadow:\n%s", v)
	}
}

// TestOverviewSaysNothingOfOthersUntilTheyRemove: outside shadow mode,
// no BY OTHERS line until something vanished that no pass removed.
func TestOverviewSaysNothingOfOthersUntilTheyRemove(t *testing.T) {
	m := New(keys.Default(false), style.Default(true))
	m.SetSize(200, 60)
	m, _ = m.Update(feed.State{Controlled: true})
	if v := ansi.Strip(m.View()); strings.Contains(v, "BY OTHERS") {
		t.Errorf("the Overview says BY OTHERS with nothing removed by others:\n%s", v)
	}
}
