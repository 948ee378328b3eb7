package containers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
)

// Detail is what enter opens on the selected pod (or a container's pod):
// its sandboxes, every container (running and dead) and its cgroup usage.
func (m Model) Detail() (feed.Detail, bool) {
	uid, ok := m.selectedPodUID()
	if !ok {
		return feed.Detail{}, false
	}
	name, ok := m.pods[uid]
	if !ok {
		name = uid
	}
	sbs := m.podSandboxes(uid)
	cs := m.podContainers(uid)
	l := []string{"UID       " + uid}
	l = append(l, m.sandboxLines(sbs)...)
	l = append(l, m.containerLines(cs)...)
	l = append(l, m.cgroupLines(uid, cs)...)
	raw := struct {
		Sandboxes   []engine.Sandbox      `json:"sandboxes"`
		Containers  []engine.Container    `json:"containers"`
		Explanation []engine.ContainerRow `json:"explanation"`
	}{sbs, cs, m.podExplanation(cs)}
	return feed.Detail{Title: "Pod " + name, Lines: l, Raw: raw}, true
}

// selectedPodUID is the UID of the selected pod row, or of the pod of the
// selected container row, so that enter on either opens the same view.
func (m Model) selectedPodUID() (string, bool) {
	r, ok := m.Grid.Selected()
	if !ok {
		return "", false
	}
	uid, isPod := strings.CutPrefix(r.Key, "pod/")
	if isPod {
		return uid, true
	}
	i := slices.IndexFunc(m.snap.Containers, func(c engine.Container) bool { return c.ID == r.Key })
	if i < 0 {
		return "", false
	}
	return m.snap.Containers[i].PodUID, true
}

// podSandboxes is the pod's sandboxes, newest first, so that the current
// attempt leads.
func (m Model) podSandboxes(uid string) []engine.Sandbox {
	var sbs []engine.Sandbox
	for _, sb := range m.snap.Sandboxes {
		if sb.PodUID == uid {
			sbs = append(sbs, sb)
		}
	}
	slices.SortFunc(sbs, func(a, b engine.Sandbox) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return sbs
}

// podContainers is the pod's containers by name, and within a name newest
// first, so that a container's restarts sit together.
func (m Model) podContainers(uid string) []engine.Container {
	var cs []engine.Container
	for _, c := range m.snap.Containers {
		if c.PodUID == uid {
			cs = append(cs, c)
		}
	}
	slices.SortFunc(cs, func(a, b engine.Container) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), b.CreatedAt.Compare(a.CreatedAt))
	})
	return cs
}

// sandboxLines is the SANDBOXES section: one line per sandbox with its
// state, attempt and age.
func (m Model) sandboxLines(sbs []engine.Sandbox) []string {
	l := []string{"", fmt.Sprintf("SANDBOXES (%d)", len(sbs))}
	for _, sb := range sbs {
		l = append(l, fmt.Sprintf("  %s  %-16s attempt %d  created %s ago", format.ShortID(sb.ID), sb.State, sb.Attempt, format.Duration(m.Grid.Now().Sub(sb.CreatedAt))))
	}
	return l
}

// containerLines is the CONTAINERS section: one line per container with its
// state, its exit for a dead one, and what the plan would do with it.
func (m Model) containerLines(cs []engine.Container) []string {
	dead := 0
	for _, c := range cs {
		if c.State != engine.ContainerRunning {
			dead++
		}
	}
	l := []string{"", fmt.Sprintf("CONTAINERS (%d, %d dead)", len(cs), dead)}
	plan := map[string]string{}
	for _, row := range m.Grid.Rows() {
		if len(row.Cells) > 5 {
			plan[row.Key] = row.Cells[5]
		}
	}
	for _, c := range cs {
		s := fmt.Sprintf("  %-20s #%-3d %-8s %s", c.Name, c.Attempt, strings.ToLower(c.State.Short()), format.ShortID(c.ID))
		if c.State != engine.ContainerRunning {
			s += fmt.Sprintf("  exit %d", c.ExitCode)
			if c.FinishedAt != nil {
				s += " " + format.Duration(m.Grid.Now().Sub(*c.FinishedAt)) + " ago"
			}
		}
		if p, ok := plan[c.ID]; ok {
			s += "  " + p
		}
		l = append(l, s)
	}
	return l
}

// cgroupLines is the CGROUP section: the pod's cgroup usage and each
// container's, marking a cgroup left by an exited container as not current.
func (m Model) cgroupLines(uid string, cs []engine.Container) []string {
	head := "CGROUP"
	if m.tree != nil && !m.treeAt.IsZero() {
		// The tree is read on its own clock (every 30 s while the Cgroups
		// pane is hidden): say when.
		head += "  as of " + m.treeAt.Format(time.TimeOnly) + " (" + format.Ago(m.treeAt, m.Grid.Now()) + ")"
	}
	l := []string{"", head}
	n := podNode(m.tree, uid)
	switch {
	case m.tree == nil:
		return append(l, "  no cgroup read yet (or no cgroup reader)")
	case n == nil:
		return append(l, "  no kubepods cgroup for this pod")
	}
	running := map[string]bool{}
	for _, c := range cs {
		running[c.ID] = c.State == engine.ContainerRunning
	}
	l = append(l, "  "+n.Path, "  "+usage(n))
	for _, c := range n.Children {
		cn := cgroupfs.Unknown
		if c.Container != nil {
			cn = c.Container.Name + " " + format.ShortID(c.Container.ID)
			if !running[c.Container.ID] {
				// A cgroup left behind by an exited container: its
				// numbers are not the pod's current usage.
				l = append(l, fmt.Sprintf("    %-28s not running: usage not current", cn))
				continue
			}
		}
		l = append(l, fmt.Sprintf("    %-28s %s", cn, usage(c)))
	}
	return l
}

// podExplanation is the plan's explanation rows for the pod's containers,
// for the raw (JSON) view.
func (m Model) podExplanation(cs []engine.Container) []engine.ContainerRow {
	var rows []engine.ContainerRow
	for _, r := range m.explained {
		if slices.ContainsFunc(cs, func(c engine.Container) bool { return c.ID == r.ID }) {
			rows = append(rows, r)
		}
	}
	return rows
}

// usage is one cgroup's memory (of its limit), CPU time and pids.
func usage(n *cgroupfs.Node) string {
	limit := "no limit"
	if n.MemoryLimitBytes != nil {
		limit = "limit " + format.Bytes(int64(*n.MemoryLimitBytes))
	}
	cpu := time.Duration(n.CPUUsageNanos).Round(time.Millisecond)
	return fmt.Sprintf("memory %s (%s)  cpu time %s  pids %d", format.Bytes(int64(n.MemoryBytes)), limit, cpu, n.Pids)
}

func podNode(t *cgroupfs.Tree, uid string) *cgroupfs.Node {
	if t == nil {
		return nil
	}
	var find func(n *cgroupfs.Node) *cgroupfs.Node
	find = func(n *cgroupfs.Node) *cgroupfs.Node {
		if n == nil {
			return nil
		}
		if n.Kind == cgroupfs.KindPod && n.Pod != nil && n.Pod.UID == uid {
			return n
		}
		for _, c := range n.Children {
			if f := find(c); f != nil {
				return f
			}
		}
		return nil
	}
	return find(t.Root)
}
