package cgroupfs

import (
	"path"
	"strings"
)

// CgroupName is a driver-neutral cgroup name: the list of components from
// the hierarchy root, as the kubelet's CgroupName in
// pkg/kubelet/cm/cgroup_manager_linux.go. [kubepods burstable pod1234-abcd]
// is /kubepods/burstable/pod1234-abcd under the cgroupfs driver and
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice
// under the systemd driver.
type CgroupName []string

const systemdSliceSuffix = ".slice"

// ToCgroupfs returns the name as a cgroupfs-driver path, "/" for the root.
func (n CgroupName) ToCgroupfs() string {
	return "/" + path.Join(n...)
}

// ToSystemd returns the name as a systemd-driver path: every prefix of the
// name becomes a slice whose unit name joins the components with "-", after
// each "-" inside a component was escaped to "_" (systemd reads "-" as the
// slice hierarchy separator). The root is "/". It equals the kubelet's
// ToSystemd (escape, then the systemd ExpandSlice of runc's library) for
// every valid name, without its error: an empty component simply yields an
// empty unit part instead of a panic.
func (n CgroupName) ToSystemd() string {
	if len(n) == 0 || (len(n) == 1 && n[0] == "") {
		return "/"
	}
	var b strings.Builder
	prefix := ""
	for _, part := range n {
		part = escapeSystemd(part)
		b.WriteByte('/')
		b.WriteString(prefix)
		b.WriteString(part)
		b.WriteString(systemdSliceSuffix)
		prefix += part + "-"
	}
	return b.String()
}

// ParseCgroupfs turns a cgroupfs-driver path back into a name, as the
// kubelet's ParseCgroupfsToCgroupName: "/" and "" are the root.
func ParseCgroupfs(p string) CgroupName {
	p = strings.Trim(p, "/")
	if p == "" {
		return CgroupName{}
	}
	return CgroupName(strings.Split(p, "/"))
}

// ParseSystemd turns a systemd-driver slice path back into a name, as the
// kubelet's ParseSystemdToCgroupName: the last slice alone carries the whole
// name (kubepods-burstable-pod1234_abcd.slice), so only it is read, and "_"
// is unescaped to "-". "/" and "-.slice" are the root. It is for slices;
// container scopes are read by [ParseContainerLeaf].
func ParseSystemd(p string) CgroupName {
	base := strings.TrimSuffix(path.Base(p), systemdSliceSuffix)
	if base == "/" || base == "." || base == "" || base == "-" {
		return CgroupName{}
	}
	parts := strings.Split(base, "-")
	for i, part := range parts {
		parts[i] = unescapeSystemd(part)
	}
	return CgroupName(parts)
}

func escapeSystemd(part string) string   { return strings.ReplaceAll(part, "-", "_") }
func unescapeSystemd(part string) string { return strings.ReplaceAll(part, "_", "-") }

// Container runtimes name the leaf cgroup of a container in their own way.
// These are the prefixes of the known ones; under the systemd driver each
// leaf is also suffixed ".scope".
var leafPrefixes = []struct {
	prefix  string
	runtime string
	conmon  bool
}{
	// CRI-O puts its monitor process (conmon) in a sibling cgroup; it must
	// come before "crio-" so it wins.
	{"crio-conmon-", "cri-o", true},
	{"crio-", "cri-o", false},
	{"cri-containerd-", "containerd", false},
	{"docker-", "docker", false},
}

// ContainerLeaf is what the name of a container's leaf cgroup says.
type ContainerLeaf struct {
	// ID is the container ID.
	ID string
	// Runtime is "containerd", "cri-o" or "docker" when the name carries a
	// runtime prefix, "" for a bare ID (containerd or cri-dockerd under the
	// cgroupfs driver).
	Runtime string
	// Conmon reports whether the cgroup holds CRI-O's conmon for the
	// container rather than the container itself.
	Conmon bool
}

// ParseContainerLeaf reads a container's leaf cgroup directory name:
// "<id>" (cgroupfs driver), "cri-containerd-<id>.scope" (containerd, systemd
// driver), "crio-<id>.scope" and "crio-conmon-<id>.scope" (CRI-O, with or
// without ".scope"), "docker-<id>.scope". It reports false for a name that is
// none of these: an empty ID, a slice, a scope of an unknown runtime.
func ParseContainerLeaf(name string) (ContainerLeaf, bool) {
	if strings.HasSuffix(name, systemdSliceSuffix) {
		return ContainerLeaf{}, false
	}
	unit := strings.TrimSuffix(name, ".scope")
	for _, p := range leafPrefixes {
		if id, ok := strings.CutPrefix(unit, p.prefix); ok {
			return ContainerLeaf{ID: id, Runtime: p.runtime, Conmon: p.conmon}, id != ""
		}
	}
	if name == "" || strings.ContainsAny(name, "./") {
		return ContainerLeaf{}, false
	}
	return ContainerLeaf{ID: name}, true
}

// qosClasses are the QoS cgroup components the kubelet creates under
// kubepods; guaranteed pods have no QoS cgroup and sit under kubepods.
var qosClasses = []string{"burstable", "besteffort"}

// QoS classes as the tree reports them (the cgroup components, lower case).
const (
	QOSGuaranteed = "guaranteed"
	QOSBurstable  = "burstable"
	QOSBestEffort = "besteffort"
)

// podUIDFromComponent returns the pod UID of a pod cgroup component
// ("pod<uid>"), which is already unescaped.
func podUIDFromComponent(c string) (string, bool) {
	uid, ok := strings.CutPrefix(c, "pod")
	return uid, ok && uid != ""
}
