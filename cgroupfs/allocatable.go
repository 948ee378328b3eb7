package cgroupfs

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/nodegc/nodegc/internal/quantity"
)

// Allocatable is node allocatable as the kubelet computes it, the limits the
// kubelet is expected to set on the kubepods cgroup, and the limits really
// set there.
//
// The kubelet (pkg/kubelet/cm/node_container_manager_linux.go,
// enforceNodeAllocatableCgroups) sets the kubepods cgroup from
// getNodeAllocatableInternalAbsolute when enforceNodeAllocatable contains
// "pods" (the default), else from capacity. That is, per resource,
// max(0, capacity − systemReserved − kubeReserved), and for memory minus the
// pre-allocated huge pages as well (never below 0). Hard eviction thresholds
// are NOT subtracted: they lower the Allocatable the node reports to the
// scheduler (GetNodeAllocatableReservation), not the cgroup limit.
// getCgroupConfig then turns memory into the limit in bytes and CPU into
// cpu.shares = MilliCPUToShares(milliCPU) (cgroup v2: cpu.weight =
// 1 + (shares−2)·9999/262142); no CPU quota is set.
//
// Drift compares exactly that: the memory limit on kubepods against the
// expected value rounded down to the page size (the kernel keeps limits in
// pages), and cpu.shares or cpu.weight against the expected value.
type Allocatable struct {
	// CapacityMemoryBytes is MemTotal of /proc/meminfo, what cadvisor
	// reports as the node's memory capacity.
	CapacityMemoryBytes int64 `json:"capacityMemoryBytes"`
	// HugePagesBytes is the memory pre-allocated to huge pages, which the
	// kubelet takes off allocatable memory.
	HugePagesBytes int64 `json:"hugePagesBytes"`
	// CapacityMilliCPU is the CPU count × 1000.
	CapacityMilliCPU int64 `json:"capacityMilliCPU"`
	// SystemReservedMemoryBytes, KubeReservedMemoryBytes,
	// SystemReservedMilliCPU and KubeReservedMilliCPU are the reservations
	// of the kubelet config.
	SystemReservedMemoryBytes int64 `json:"systemReservedMemoryBytes"`
	KubeReservedMemoryBytes   int64 `json:"kubeReservedMemoryBytes"`
	SystemReservedMilliCPU    int64 `json:"systemReservedMilliCPU"`
	KubeReservedMilliCPU      int64 `json:"kubeReservedMilliCPU"`
	// MemoryBytes and MilliCPU are node allocatable (absolute, before
	// eviction thresholds): capacity minus the reservations, never negative.
	MemoryBytes int64 `json:"memoryBytes"`
	MilliCPU    int64 `json:"milliCPU"`
	// EnforcePods reports whether enforceNodeAllocatable contains "pods",
	// so that the kubepods limits are allocatable rather than capacity.
	EnforcePods bool `json:"enforcePods"`
	// Expected is what the kubelet sets on the kubepods cgroup.
	Expected KubepodsLimits `json:"expected"`
	// Kubepods is what is set on the kubepods cgroup; nil when it does not
	// exist.
	Kubepods *KubepodsLimits `json:"kubepods,omitempty"`
	// Drift lists each way Kubepods differs from Expected.
	Drift []string `json:"drift,omitempty"`
	// Errors lists what could not be read or parsed (meminfo, a
	// reservation, a kubepods file).
	Errors []string `json:"errors,omitempty"`
}

// KubepodsLimits are the limits of the kubepods cgroup. A nil field is
// unlimited, not applicable or unreadable.
type KubepodsLimits struct {
	MemoryLimitBytes *uint64 `json:"memoryLimitBytes"`
	// CPUShares is cpu.shares (v1), CPUWeight cpu.weight (v2).
	CPUShares *uint64 `json:"cpuShares,omitempty"`
	CPUWeight *uint64 `json:"cpuWeight,omitempty"`
	// PidsMax is pids.max, nil for "max".
	PidsMax *uint64 `json:"pidsMax,omitempty"`
}

func allocatable(cfg Config, l Layout, root *Node) Allocatable {
	var a Allocatable
	meminfo := cfg.Meminfo
	if meminfo == "" {
		meminfo = "/proc/meminfo"
	}
	mem, huge, err := readMeminfo(meminfo)
	if err != nil {
		a.Errors = append(a.Errors, err.Error())
	}
	a.CapacityMemoryBytes, a.HugePagesBytes = mem, huge
	ncpu := cfg.NumCPU
	if ncpu <= 0 {
		ncpu = onlineCPUs()
	}
	a.CapacityMilliCPU = int64(ncpu) * 1000

	reserved := func(what string, m map[string]string, res string, milli bool) int64 {
		s, ok := m[res]
		if !ok {
			return 0
		}
		v, err := ParseQuantity(s, milli)
		if err != nil {
			a.Errors = append(a.Errors, fmt.Sprintf("%s %s: %v", what, res, err))
		}
		return v
	}
	a.SystemReservedMemoryBytes = reserved("systemReserved", cfg.SystemReserved, "memory", false)
	a.KubeReservedMemoryBytes = reserved("kubeReserved", cfg.KubeReserved, "memory", false)
	a.SystemReservedMilliCPU = reserved("systemReserved", cfg.SystemReserved, "cpu", true)
	a.KubeReservedMilliCPU = reserved("kubeReserved", cfg.KubeReserved, "cpu", true)

	a.MemoryBytes = max(0, max(0, a.CapacityMemoryBytes-a.SystemReservedMemoryBytes-a.KubeReservedMemoryBytes)-a.HugePagesBytes)
	a.MilliCPU = max(0, a.CapacityMilliCPU-a.SystemReservedMilliCPU-a.KubeReservedMilliCPU)
	a.EnforcePods = cfg.EnforceNodeAllocatable == nil || slices.Contains(cfg.EnforceNodeAllocatable, "pods")

	expMem, expCPU := a.CapacityMemoryBytes, a.CapacityMilliCPU
	if a.EnforcePods {
		expMem, expCPU = a.MemoryBytes, a.MilliCPU
	}
	page := int64(os.Getpagesize())
	expMemLimit := uint64(expMem / page * page)
	a.Expected.MemoryLimitBytes = &expMemLimit
	shares := milliCPUToShares(expCPU)
	if l.Mode == ModeV2 {
		w := cpuSharesToWeight(shares)
		a.Expected.CPUWeight = &w
	} else {
		a.Expected.CPUShares = &shares
	}
	if root == nil {
		return a
	}
	a.Kubepods = kubepodsLimits(l, root, &a.Errors)
	a.Drift = drift(a.Expected, *a.Kubepods, mem > 0)
	return a
}

// kubepodsLimits reads the limits set on the kubepods cgroup; the memory
// limit was read with the root node.
func kubepodsLimits(l Layout, root *Node, errs *[]string) *KubepodsLimits {
	k := &KubepodsLimits{MemoryLimitBytes: root.MemoryLimitBytes}
	var r fileReader
	read := func(ctrl, file string) *uint64 {
		dir, ok := l.Mountpoint(ctrl, l.KubepodsPath)
		if !ok {
			*errs = append(*errs, ctrl+": controller not mounted")
			return nil
		}
		b, err := r.readAt(dir, "", file)
		if err != nil {
			*errs = append(*errs, "kubepods "+fileError(file, err))
			return nil
		}
		if string(b) == "max" {
			return nil
		}
		v, err := parseUint(b)
		if err != nil {
			*errs = append(*errs, "kubepods "+fileError(file, err))
			return nil
		}
		return &v
	}
	if l.Mode == ModeV2 {
		k.CPUWeight = read("cpu", "cpu.weight")
	} else {
		k.CPUShares = read("cpu", "cpu.shares")
	}
	k.PidsMax = read("pids", "pids.max")
	return k
}

// drift lists how the kubepods limits differ from the expected ones. The
// memory comparison needs a known capacity.
func drift(want, got KubepodsLimits, memKnown bool) []string {
	var d []string
	if memKnown {
		switch {
		case got.MemoryLimitBytes == nil:
			d = append(d, fmt.Sprintf("kubepods memory is unlimited; the kubelet would set %s (%d bytes)",
				HumanBytes(*want.MemoryLimitBytes), *want.MemoryLimitBytes))
		case *got.MemoryLimitBytes != *want.MemoryLimitBytes:
			d = append(d, fmt.Sprintf("kubepods memory limit is %s (%d bytes); capacity − reservations is %s (%d bytes)",
				HumanBytes(*got.MemoryLimitBytes), *got.MemoryLimitBytes, HumanBytes(*want.MemoryLimitBytes), *want.MemoryLimitBytes))
		}
	}
	if want.CPUShares != nil && got.CPUShares != nil && *got.CPUShares != *want.CPUShares {
		d = append(d, fmt.Sprintf("kubepods cpu.shares is %d; the kubelet would set %d", *got.CPUShares, *want.CPUShares))
	}
	if want.CPUWeight != nil && got.CPUWeight != nil && *got.CPUWeight != *want.CPUWeight {
		d = append(d, fmt.Sprintf("kubepods cpu.weight is %d; the kubelet would set %d", *got.CPUWeight, *want.CPUWeight))
	}
	return d
}

// milliCPUToShares is the kubelet's MilliCPUToShares
// (pkg/kubelet/cm/helpers_linux.go): 1024 shares per CPU, within [2, 262144].
func milliCPUToShares(milli int64) uint64 {
	if milli == 0 {
		return 2
	}
	shares := milli * 1024 / 1000
	return uint64(min(max(shares, 2), 262144))
}

// cpuSharesToWeight is the kubelet's CpuSharesToCpuWeight
// (pkg/kubelet/cm/cgroup_manager_linux.go), which is what it writes to
// cpu.weight under cgroup v2 (runc's library has a different, newer curve).
func cpuSharesToWeight(shares uint64) uint64 {
	return (shares-2)*9999/262142 + 1
}

// readMeminfo returns MemTotal and the memory held by huge pages (Hugetlb,
// or HugePages_Total × Hugepagesize on kernels before 4.16) in bytes.
func readMeminfo(path string) (total, huge int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("read memory capacity: %w", err)
	}
	defer f.Close()
	var hugetlb, pages, pageSize int64 = -1, 0, 0
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		switch key {
		case "MemTotal":
			total, found = v, true
		case "Hugetlb":
			hugetlb = v
		case "HugePages_Total":
			pages = v
		case "Hugepagesize":
			pageSize = v
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("read memory capacity: %w", err)
	}
	if !found {
		return 0, 0, fmt.Errorf("read memory capacity: no MemTotal in %s", path)
	}
	if hugetlb >= 0 {
		return total, hugetlb, nil
	}
	return total, pages * pageSize, nil
}

// onlineCPUs counts the CPUs in /sys/devices/system/cpu/online ("0-3,5"),
// falling back to the Go runtime's count.
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for r := range strings.SplitSeq(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return runtime.NumCPU()
		}
		n += z - a + 1
	}
	return n
}

// ParseQuantity parses a Kubernetes resource quantity ("500Mi", "1.5G",
// "100m", "2", "1e3") with resource.ParseQuantity and returns its value
// rounded up to an integer (Quantity.Value), or with milli its MilliValue
// (CPU in millicores). As the kubelet's parseResourceList
// (cmd/kubelet/app/server.go) does for systemReserved and kubeReserved, a
// negative quantity is an error; so is one beyond int64.
func ParseQuantity(s string, milli bool) (int64, error) {
	q, err := quantity.Parse(s)
	if err != nil {
		return 0, err
	}
	if milli {
		return quantity.MilliValue(q)
	}
	return quantity.Value(q)
}
