// The header over the tree: node capacity, reservations, allocatable and
// the kubepods limits.

package cgroups

import (
	"fmt"
	"strings"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/internal/format"
)

// header is node capacity, reservations, allocatable and the kubepods
// limits, with drift.
func (m Model) header() []string {
	st := m.Styles
	lbl := func(s string) string { return st.Label.Render(s) }
	t := m.tree
	if t == nil {
		return []string{st.Faint.Render("reading cgroups…"), "", ""}
	}
	a := t.Allocatable
	cpu := func(milli int64) string { return fmt.Sprintf("%.2g CPU", float64(milli)/1000) }
	l1 := fmt.Sprintf("%s %s/%s  %s %s, %s  %s %s, %s  %s %s, %s",
		st.Header.Render("CGROUPS"), t.Mode, orUnknown(string(t.Driver)),
		lbl("capacity"), cpu(a.CapacityMilliCPU), format.Bytes(a.CapacityMemoryBytes),
		lbl("reserved sys"), cpu(a.SystemReservedMilliCPU), format.Bytes(a.SystemReservedMemoryBytes),
		lbl("kube"), cpu(a.KubeReservedMilliCPU), format.Bytes(a.KubeReservedMemoryBytes))
	l2 := fmt.Sprintf("%s %s, %s", lbl("allocatable"), cpu(a.MilliCPU), format.Bytes(a.MemoryBytes))
	if k := a.Kubepods; k != nil {
		l2 += "  " + lbl("kubepods limits") + " " + limits(*k)
	}
	l2 += "  " + lbl("(cpu in cores)")
	l3 := ""
	switch {
	case m.err != "":
		l3 = st.Bad.Render("read failed: " + m.err)
	case len(a.Drift) > 0:
		l3 = st.Warn.Render("drift: " + strings.Join(a.Drift, "; "))
	case len(t.Errors) > 0:
		l3 = st.Warn.Render(strings.Join(t.Errors, "; "))
	case a.Kubepods != nil:
		l3 = st.OK.Render("kubepods limits match allocatable")
	}
	return []string{l1, l2, l3}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func limits(k cgroupfs.KubepodsLimits) string {
	var parts []string
	mem := "mem unlimited"
	if k.MemoryLimitBytes != nil {
		mem = "mem " + format.Bytes(int64(*k.MemoryLimitBytes))
	}
	parts = append(parts, mem)
	if k.CPUShares != nil {
		parts = append(parts, fmt.Sprintf("cpu.shares %d", *k.CPUShares))
	}
	if k.CPUWeight != nil {
		parts = append(parts, fmt.Sprintf("cpu.weight %d", *k.CPUWeight))
	}
	if k.PidsMax != nil {
		parts = append(parts, fmt.Sprintf("pids.max %d", *k.PidsMax))
	}
	return strings.Join(parts, ", ")
}
