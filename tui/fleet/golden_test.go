package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/fleet"
)

// TestGoldenScreens checks the fleet table, its full help and a node's
// view at the dashboard's three sizes against
// testdata/TestGoldenScreens/WxH/NAME.golden, over the fixture fleet and
// clock; `go test ./tui/fleet -run TestGoldenScreens -update` rewrites
// them.
func TestGoldenScreens(t *testing.T) {
	screens := []struct {
		name string
		keys []string
	}{
		{"fleet", nil},
		{"help", []string{"?"}},
		{"node", []string{"j", "enter"}},
	}
	for _, sz := range []struct{ w, h int }{{80, 24}, {120, 36}, {220, 60}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			for _, tt := range screens {
				t.Run(tt.name, func(t *testing.T) {
					nodes := goldenFleet()
					var tm tea.Model = New(Options{Now: func() time.Time { return now }, Source: newSource(nodes)})
					tm, _ = tm.Update(tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
					tm, _ = tm.Update(ReadMsg{Nodes: nodes, At: now})
					m, _ := press(tm.(Model), tt.keys...)
					screen := ansi.Strip(m.Screen())
					lines := strings.Split(screen, "\n")
					if len(lines) > sz.h {
						t.Errorf("%d lines on a %d-line terminal", len(lines), sz.h)
					}
					for i, l := range lines {
						if w := ansi.StringWidth(l); w > sz.w {
							t.Errorf("line %d is %d cells wide on a %d-column terminal: %q", i+1, w, sz.w, l)
						}
					}
					golden.RequireEqual(t, []byte(screen))
				})
			}
		})
	}
}

// goldenFleet is the test fleet with what an agent writes that the
// fixture leaves out: its version, start and image fs size.
func goldenFleet() []fleet.Node {
	nodes := fixture()
	for _, n := range nodes {
		if s := n.Status; s != nil && s.ImageFs != nil {
			s.Version, s.StartedAt = "v0.1.0", ptr(metav1.NewTime(now.Add(-26*time.Hour)))
			s.ImageFs.CapacityBytes = 100 << 30
			s.ImageFs.AvailableBytes = int64(100-s.ImageFs.UsagePercent) << 30
		}
	}
	return nodes
}

// TestNodeNamesStayWhole pins issue 41's column rule for the fleet: at 80
// and 120 columns the NODE column kept 1 and 4 characters ("…", "node…")
// while fixed columns kept theirs; a 17-character node name now shows
// whole at both, and the less needed columns give way.
func TestNodeNamesStayWhole(t *testing.T) {
	nodes := fixture()
	for i := range nodes {
		nodes[i].Name = fmt.Sprintf("worker-pool-a-%03d", i+1)
	}
	for _, w := range []int{80, 120} {
		var tm tea.Model = New(Options{Now: func() time.Time { return now }, Source: newSource(nodes)})
		tm, _ = tm.Update(tea.WindowSizeMsg{Width: w, Height: 24})
		tm, _ = tm.Update(ReadMsg{Nodes: nodes, At: now})
		screen := ansi.Strip(tm.(Model).Screen())
		for _, n := range nodes {
			if !strings.Contains(screen, n.Name+" ") {
				t.Errorf("%d columns: node %s is cut:\n%s", w, n.Name, screen)
			}
		}
	}
}
