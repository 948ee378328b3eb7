package cgroupfs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nodegc/nodegc/internal/format"
)

// JSON returns the tree as the JSON list of nodes of `nodegc cgroups -o
// json`: [root], or [] when there is no kubepods cgroup.
func (t *Tree) JSON() ([]byte, error) {
	nodes := []*Node{}
	if t.Root != nil {
		nodes = append(nodes, t.Root)
	}
	b, err := json.MarshalIndent(nodes, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode cgroup tree: %w", err)
	}
	return append(b, '\n'), nil
}

// HumanBytes formats a byte count in nodegc's one style (format.Size):
// "512 B", "1.5 KiB", "23.5 GiB".
func HumanBytes(b uint64) string { return format.Size(b) }

func humanInt(b int64) string {
	if b < 0 {
		return "-" + HumanBytes(uint64(-b))
	}
	return HumanBytes(uint64(b))
}

// WriteText writes the tree as `nodegc cgroups` prints it: a header with the
// mode, the driver, the mount points, node allocatable, the kubepods limits
// and any drift, then the tree in the manner of systemd-cgls with memory,
// limit, CPU seconds and pids on each line.
func (t *Tree) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	t.writeHeader(bw)
	if t.Root != nil {
		bw.WriteByte('\n')
		writeNodes(bw, t.Root)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write cgroup tree: %w", err)
	}
	return nil
}

func (t *Tree) writeHeader(w *bufio.Writer) {
	switch t.Mode {
	case ModeHybrid:
		fmt.Fprintf(w, "cgroup mode:    hybrid (v1 controllers are read; the v2 tree holds no controllers)\n")
	case ModeV2:
		fmt.Fprintf(w, "cgroup mode:    v2 (unified)\n")
	default:
		fmt.Fprintf(w, "cgroup mode:    v1\n")
	}
	driver, from := string(t.Driver), "detected"
	if t.DriverFromConfig {
		from = "from kubelet config"
	}
	if driver == "" {
		driver, from = "unknown", "not configured, no kubepods cgroup"
	}
	fmt.Fprintf(w, "cgroup driver:  %s (%s)\n", driver, from)
	if t.KubepodsPath != "" {
		fmt.Fprintf(w, "kubepods:       %s\n", t.KubepodsPath)
	}
	fmt.Fprintf(w, "mounts:\n")
	width := 0
	for _, m := range t.Mounts {
		width = max(width, len(m.Mountpoint))
	}
	for _, m := range t.Mounts {
		ctrls := strings.Join(m.Controllers, ",")
		if ctrls == "" {
			ctrls = "(no controllers)"
		}
		fmt.Fprintf(w, "  %-*s  v%d  %s\n", width, m.Mountpoint, m.Version, ctrls)
	}

	a := t.Allocatable
	fmt.Fprintf(w, "node allocatable: memory %s = capacity %s − system-reserved %s − kube-reserved %s",
		humanInt(a.MemoryBytes), humanInt(a.CapacityMemoryBytes), humanInt(a.SystemReservedMemoryBytes), humanInt(a.KubeReservedMemoryBytes))
	if a.HugePagesBytes > 0 {
		fmt.Fprintf(w, " − hugepages %s", humanInt(a.HugePagesBytes))
	}
	fmt.Fprintf(w, "\n                  cpu %dm = capacity %dm − system-reserved %dm − kube-reserved %dm\n",
		a.MilliCPU, a.CapacityMilliCPU, a.SystemReservedMilliCPU, a.KubeReservedMilliCPU)
	basis := "allocatable (enforceNodeAllocatable has pods)"
	if !a.EnforcePods {
		basis = "capacity (enforceNodeAllocatable lacks pods)"
	}
	fmt.Fprintf(w, "kubepods limits:  expected %s, from %s\n", a.Expected.text(), basis)
	if a.Kubepods != nil {
		fmt.Fprintf(w, "                  set      %s\n", a.Kubepods.text())
	}
	switch {
	case len(a.Drift) > 0:
		for _, d := range a.Drift {
			fmt.Fprintf(w, "drift:            %s\n", d)
		}
	case a.Kubepods != nil && a.CapacityMemoryBytes > 0:
		fmt.Fprintf(w, "drift:            none\n")
	}
	for _, e := range a.Errors {
		fmt.Fprintf(w, "error:            %s\n", e)
	}
	for _, e := range t.Errors {
		fmt.Fprintf(w, "error:            %s\n", e)
	}
}

func (k KubepodsLimits) text() string {
	parts := []string{"memory " + limitText(k.MemoryLimitBytes)}
	if k.CPUShares != nil {
		parts = append(parts, "cpu.shares "+strconv.FormatUint(*k.CPUShares, 10))
	}
	if k.CPUWeight != nil {
		parts = append(parts, "cpu.weight "+strconv.FormatUint(*k.CPUWeight, 10))
	}
	if k.PidsMax != nil {
		parts = append(parts, "pids.max "+strconv.FormatUint(*k.PidsMax, 10))
	}
	return strings.Join(parts, ", ")
}

func limitText(l *uint64) string {
	if l == nil {
		return "max"
	}
	return HumanBytes(*l)
}

// line is one row of the tree view.
type line struct {
	label string
	n     *Node
}

func writeNodes(w *bufio.Writer, root *Node) {
	var lines []line
	var walk func(n *Node, prefix, glyph string)
	walk = func(n *Node, prefix, glyph string) {
		lines = append(lines, line{prefix + glyph + label(n), n})
		childPrefix := prefix
		switch glyph {
		case "├─":
			childPrefix += "│ "
		case "└─":
			childPrefix += "  "
		}
		for i, c := range n.Children {
			g := "├─"
			if i == len(n.Children)-1 {
				g = "└─"
			}
			walk(c, childPrefix, g)
		}
	}
	walk(root, "", "")
	width := len("CGROUP")
	for _, l := range lines {
		width = max(width, utf8.RuneCountInString(l.label))
	}
	pad := func(s string) string { return s + strings.Repeat(" ", width-utf8.RuneCountInString(s)) }
	fmt.Fprintf(w, "%s  %9s  %9s  %10s  %6s  NOTES\n", pad("CGROUP"), "MEMORY", "LIMIT", "CPU", "PIDS")
	for _, l := range lines {
		n := l.n
		cpu := strconv.FormatFloat(float64(n.CPUUsageNanos)/1e9, 'f', 2, 64) + "s"
		notes := strings.Join(n.Errors, "; ")
		if n.PSI != nil {
			psi := "psi"
			if n.PSI.Memory != nil {
				psi += " mem " + strconv.FormatFloat(n.PSI.Memory.Some.Avg10, 'f', 2, 64)
			}
			if n.PSI.CPU != nil {
				psi += " cpu " + strconv.FormatFloat(n.PSI.CPU.Some.Avg10, 'f', 2, 64)
			}
			notes = strings.TrimPrefix(notes+"; "+psi, "; ")
		}
		row := fmt.Sprintf("%s  %9s  %9s  %10s  %6d  %s", pad(l.label), HumanBytes(n.MemoryBytes), limitText(n.MemoryLimitBytes), cpu, n.Pids, notes)
		w.WriteString(strings.TrimRight(row, " "))
		w.WriteByte('\n')
	}
}

// label is how a node is named in the tree view.
func label(n *Node) string {
	switch n.Kind {
	case KindQOS:
		return n.QOS
	case KindPod:
		name := n.Pod.Name
		if n.Pod.Namespace != "" {
			name = n.Pod.Namespace + "/" + name
		}
		if n.Pod.UID == "" {
			return name + " (" + baseName(n.Path) + ")"
		}
		return name + " (pod " + n.Pod.UID + ")"
	case KindContainer:
		id := n.Container.ID
		if len(id) > 12 {
			id = id[:12]
		}
		name := n.Container.Name
		if n.Conmon {
			name = "conmon of " + name
		}
		return name + " (" + id + ")"
	}
	return n.Path
}

func baseName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}
