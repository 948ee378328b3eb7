// The tree: row labels, which nodes are collapsed, the order of
// siblings, and the keys that fold and unfold it.

package cgroups

import (
	"cmp"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/grid"
)

// label names a node for a person.
func label(n *cgroupfs.Node) string {
	switch n.Kind {
	case cgroupfs.KindRoot:
		return "kubepods"
	case cgroupfs.KindQOS:
		return n.QOS
	case cgroupfs.KindPod:
		if n.Pod != nil && n.Pod.Name != cgroupfs.Unknown && n.Pod.Name != "" {
			return n.Pod.Namespace + "/" + n.Pod.Name
		}
		if n.Pod != nil {
			return "unknown pod " + shortUID(n.Pod.UID)
		}
	case cgroupfs.KindContainer:
		if n.Container != nil {
			name := n.Container.Name
			if name == "" {
				name = cgroupfs.Unknown
			}
			if n.Conmon {
				name += " (conmon)"
			}
			return name + " " + format.ShortID(n.Container.ID)
		}
	}
	return n.Path
}

func shortUID(u string) string {
	if len(u) > 8 {
		return u[:8]
	}
	return u
}

func (m *Model) isCollapsed(n *cgroupfs.Node) bool {
	if len(n.Children) == 0 {
		return false
	}
	if m.collapsed[n.Path] {
		return true
	}
	// Pods start collapsed, so the tree opens at one line per pod.
	return n.Kind == cgroupfs.KindPod && !m.allOpen && !m.expanded[n.Path]
}

func (m *Model) children(n *cgroupfs.Node) []*cgroupfs.Node {
	return grid.Ordered(&m.Pane, n.Children, func(a, b *cgroupfs.Node) int {
		if m.Sort == ByMemory {
			return cmp.Compare(b.MemoryBytes, a.MemoryBytes)
		}
		return cmp.Compare(m.rate[b.Path], m.rate[a.Path])
	})
}

// nodeID is what c copies from a node: a container's ID, a pod's UID,
// else the cgroup path.
func nodeID(n *cgroupfs.Node) string {
	switch {
	case n.Container != nil && n.Container.ID != "":
		return n.Container.ID
	case n.Kind == cgroupfs.KindPod && n.Pod != nil:
		return n.Pod.UID
	}
	return n.Path
}

// TakeKey handles the keys that collapse and expand the tree and reports
// whether k was one of them.
func (m *Model) TakeKey(k tea.KeyPressMsg) bool {
	switch {
	case key.Matches(k, m.Keys.Toggle):
		m.toggle(k)
	case key.Matches(k, m.Keys.ExpandAll):
		m.allOpen = true
		clear(m.collapsed)
		m.Rebuild()
	case key.Matches(k, m.Keys.CollapseAll):
		m.allOpen = false
		clear(m.expanded)
		m.Grid.Top() // the selected group may be folded away: start at the root
		m.Rebuild()
	default:
		return false
	}
	return true
}

func (m *Model) toggle(k tea.KeyPressMsg) {
	row, ok := m.Grid.Selected()
	if !ok || m.tree == nil {
		return
	}
	n := find(m.tree.Root, row.Key)
	if n == nil || len(n.Children) == 0 {
		return
	}
	closed := m.isCollapsed(n)
	open := closed
	switch {
	case key.Matches(k, m.Keys.Expand):
		open = true
	case key.Matches(k, m.Keys.Collapse):
		open = false
	}
	if open {
		delete(m.collapsed, n.Path)
		m.expanded[n.Path] = true
	} else {
		delete(m.expanded, n.Path)
		m.collapsed[n.Path] = true
	}
	m.Rebuild()
}

func find(n *cgroupfs.Node, path string) *cgroupfs.Node {
	if n == nil {
		return nil
	}
	if n.Path == path {
		return n
	}
	for _, c := range n.Children {
		if f := find(c, path); f != nil {
			return f
		}
	}
	return nil
}
