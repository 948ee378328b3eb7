package cgroupfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/cgroups"
)

// DefaultRoot is where the cgroup filesystems are mounted on every
// distribution the kubelet supports.
const DefaultRoot = "/sys/fs/cgroup"

// Mode is how the cgroup filesystems are mounted.
type Mode string

// Cgroup modes.
const (
	// ModeV1 is legacy cgroup v1: one hierarchy per controller (or group of
	// controllers) under Root, no cgroup v2 tree.
	ModeV1 Mode = "v1"
	// ModeV2 is the unified cgroup v2 hierarchy mounted at Root.
	ModeV2 Mode = "v2"
	// ModeHybrid is v1 controller hierarchies plus a cgroup v2 tree at
	// Root/unified that holds no controllers (systemd's "hybrid" layout).
	// The kubelet and runc use the v1 controllers; so does this package.
	ModeHybrid Mode = "hybrid"
)

// Driver is the kubelet's cgroup driver, which decides how cgroups are named.
type Driver string

// Cgroup drivers.
const (
	// DriverCgroupfs names cgroups by plain directories: kubepods/burstable/pod<uid>.
	DriverCgroupfs Driver = "cgroupfs"
	// DriverSystemd names cgroups as systemd slices and scopes:
	// kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice.
	DriverSystemd Driver = "systemd"
)

// Mount is one mounted cgroup hierarchy.
type Mount struct {
	// Mountpoint is where the hierarchy is mounted.
	Mountpoint string `json:"mountpoint"`
	// Root is the cgroup of the hierarchy that is mounted there, "/" unless
	// the mount is a bind mount of a sub-tree (inside a container).
	Root string `json:"root"`
	// Controllers are the controllers attached to the hierarchy; a named
	// hierarchy such as name=systemd shows as "systemd". Empty for a v2 tree
	// without controllers (the unified tree of hybrid mode).
	Controllers []string `json:"controllers"`
	// Version is 1 or 2.
	Version int `json:"version"`
}

// Layout is what discovery finds before any cgroup is read.
type Layout struct {
	// Mode is v1, v2 or hybrid.
	Mode Mode `json:"mode"`
	// Driver is the cgroup driver, "" when it was not configured and no
	// kubepods cgroup exists to detect it from.
	Driver Driver `json:"driver"`
	// DriverFromConfig reports whether Driver came from the configuration
	// (the kubelet's cgroupDriver) rather than from the kubepods cgroup
	// found on disk.
	DriverFromConfig bool `json:"driverFromConfig"`
	// Mounts are the cgroup hierarchies, sorted by mount point.
	Mounts []Mount `json:"mounts"`
	// Kubepods is the name of the kubepods cgroup: the kubelet's cgroupRoot
	// plus "kubepods".
	Kubepods CgroupName `json:"kubepods"`
	// KubepodsPath is Kubepods as a path of Driver ("" without a driver).
	KubepodsPath string `json:"kubepodsPath"`
}

// Mountpoint returns the directory that holds cgroup path p (a path in the
// hierarchy, such as /kubepods/burstable) for a controller. Under v2 every
// controller is in the one tree. ok is false when no mounted hierarchy has
// the controller, or its mount does not reach p.
func (l Layout) Mountpoint(controller, p string) (dir string, ok bool) {
	for _, m := range l.Mounts {
		if l.Mode == ModeHybrid && m.Version == 2 {
			continue // the unified tree of hybrid mode has no controllers
		}
		if l.Mode != ModeV2 && !slices.Contains(m.Controllers, controller) {
			continue
		}
		rel, ok := cutRoot(p, m.Root)
		if !ok {
			return "", false
		}
		return m.Mountpoint + rel, true
	}
	return "", false
}

// unifiedPath returns the directory of cgroup path p in the v2 tree, when
// there is one (v2 and hybrid).
func (l Layout) unifiedPath(p string) (string, bool) {
	for _, m := range l.Mounts {
		if m.Version == 2 {
			rel, ok := cutRoot(p, m.Root)
			return m.Mountpoint + rel, ok
		}
	}
	return "", false
}

// cutRoot returns p relative to a mount's root ("" or "/x/y"), reporting
// false when p lies outside it.
func cutRoot(p, root string) (string, bool) {
	if root == "" || root == "/" {
		if p == "/" {
			return "", true
		}
		return p, true
	}
	if p == root {
		return "", true
	}
	rel, ok := strings.CutPrefix(p, root)
	return rel, ok && strings.HasPrefix(rel, "/")
}

// Config says where to look and what the kubelet was told. The CLI fills it
// from the kubelet config file (/var/lib/kubelet/config.yaml) and flags.
type Config struct {
	// CgroupRoot is the kubelet's cgroupRoot, a cgroupfs-style path; "" is
	// "/". The kubelet parses it as a cgroupfs path whatever the driver and
	// appends "kubepods".
	CgroupRoot string
	// CgroupDriver is the kubelet's cgroupDriver ("cgroupfs" or "systemd");
	// "" means detect it from the kubepods cgroup that exists.
	CgroupDriver string
	// Root is where the cgroup filesystems are mounted, DefaultRoot when
	// empty. Another root (a fixture tree in tests, a chroot) is read by its
	// layout alone: cgroup.controllers at Root is v2, Root/unified with
	// cgroup.controllers is hybrid, and each other directory of Root is a v1
	// hierarchy named by its controllers ("cpu,cpuacct").
	Root string
	// SystemReserved and KubeReserved are the kubelet's systemReserved and
	// kubeReserved, as in its config: {"memory": "500Mi", "cpu": "100m"}.
	SystemReserved, KubeReserved map[string]string
	// EnforceNodeAllocatable is the kubelet's enforceNodeAllocatable; nil
	// means the kubelet default ["pods"]. Without "pods" the kubelet sets
	// the kubepods limits to capacity, not allocatable.
	EnforceNodeAllocatable []string
	// Meminfo is the file MemTotal is read from, /proc/meminfo when empty.
	Meminfo string
	// NumCPU is the node's CPU count; 0 means the online CPUs
	// (/sys/devices/system/cpu/online, as cadvisor counts them).
	NumCPU int
	// MaxOpenFiles is the most cgroup files (and directories) a Reader keeps
	// open between reads: 0 means DefaultMaxOpenFiles (at most three
	// quarters of the process's limit on open files), a negative value
	// none. Files beyond it are opened, read and closed on every read.
	MaxOpenFiles int
}

func (c Config) root() string {
	if c.Root == "" {
		return DefaultRoot
	}
	return filepath.Clean(c.Root)
}

// Discover finds the cgroup mode, the mounted hierarchies, the driver and
// the kubepods cgroup. For DefaultRoot it asks runc's cgroup library (statfs
// of the mounts, /proc/self/mountinfo); for any other Root it reads the
// layout of the directory (see Config.Root).
func Discover(cfg Config) (Layout, error) {
	var (
		l   Layout
		err error
	)
	root := cfg.root()
	if root == DefaultRoot {
		l, err = discoverSystem()
	} else {
		l, err = discoverDir(root)
	}
	if err != nil {
		return Layout{}, err
	}
	slices.SortFunc(l.Mounts, func(a, b Mount) int { return strings.Compare(a.Mountpoint, b.Mountpoint) })

	l.Kubepods = append(ParseCgroupfs(cfg.CgroupRoot), "kubepods")
	switch strings.ToLower(cfg.CgroupDriver) {
	case "":
		l.Driver = detectDriver(l)
	case string(DriverCgroupfs):
		l.Driver, l.DriverFromConfig = DriverCgroupfs, true
	case string(DriverSystemd):
		l.Driver, l.DriverFromConfig = DriverSystemd, true
	default:
		return Layout{}, fmt.Errorf("cgroup driver %q: want cgroupfs or systemd", cfg.CgroupDriver)
	}
	l.KubepodsPath = l.path(l.Kubepods)
	return l, nil
}

// path returns a cgroup name as a path of the layout's driver.
func (l Layout) path(n CgroupName) string {
	switch l.Driver {
	case DriverSystemd:
		return n.ToSystemd()
	case DriverCgroupfs:
		return n.ToCgroupfs()
	}
	return ""
}

// walkController is the controller whose hierarchy the tree is walked in:
// the first of these that is mounted.
var walkControllers = []string{"memory", "cpuacct", "cpu", "pids", "systemd"}

func (l Layout) walkDir(p string) (string, bool) {
	for _, c := range walkControllers {
		if dir, ok := l.Mountpoint(c, p); ok {
			return dir, true
		}
	}
	return "", false
}

// detectDriver picks the driver whose kubepods cgroup exists; when both do
// (a node that switched drivers), the one holding pods wins, cgroupfs on a
// tie.
func detectDriver(l Layout) Driver {
	best, bestChildren := Driver(""), -1
	for _, d := range []Driver{DriverCgroupfs, DriverSystemd} {
		l.Driver = d
		dir, ok := l.walkDir(l.path(l.Kubepods))
		if !ok {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		n := 0
		for _, e := range entries {
			if e.IsDir() {
				n++
			}
		}
		if n > bestChildren {
			best, bestChildren = d, n
		}
	}
	return best
}

// discoverSystem asks runc's cgroup library about /sys/fs/cgroup.
func discoverSystem() (Layout, error) {
	if cgroups.IsCgroup2UnifiedMode() {
		data, err := cgroups.ReadFile(DefaultRoot, "cgroup.controllers")
		if err != nil {
			return Layout{}, fmt.Errorf("read cgroup v2 controllers: %w", err)
		}
		return Layout{Mode: ModeV2, Mounts: []Mount{{
			Mountpoint: DefaultRoot, Root: "/", Controllers: strings.Fields(data), Version: 2,
		}}}, nil
	}
	mounts, err := cgroups.GetCgroupMounts(false)
	if err != nil {
		return Layout{}, fmt.Errorf("list cgroup v1 mounts: %w", err)
	}
	l := Layout{Mode: ModeV1}
	for _, m := range mounts {
		if !strings.HasPrefix(m.Mountpoint, DefaultRoot+"/") || len(m.Subsystems) == 0 {
			continue
		}
		l.Mounts = append(l.Mounts, Mount{Mountpoint: m.Mountpoint, Root: m.Root, Controllers: m.Subsystems, Version: 1})
	}
	if len(l.Mounts) == 0 {
		return Layout{}, fmt.Errorf("no cgroup v1 hierarchy mounted under %s and no cgroup v2 at %s", DefaultRoot, DefaultRoot)
	}
	if cgroups.IsCgroup2HybridMode() {
		l.Mode = ModeHybrid
		l.Mounts = append(l.Mounts, Mount{Mountpoint: DefaultRoot + "/unified", Root: "/", Controllers: []string{}, Version: 2})
	}
	return l, nil
}

// discoverDir reads the layout of a directory standing in for /sys/fs/cgroup.
func discoverDir(root string) (Layout, error) {
	if data, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err == nil {
		return Layout{Mode: ModeV2, Mounts: []Mount{{
			Mountpoint: root, Root: "/", Controllers: strings.Fields(string(data)), Version: 2,
		}}}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Layout{}, fmt.Errorf("read cgroup v2 controllers: %w", err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return Layout{}, fmt.Errorf("read cgroup root: %w", err)
	}
	l := Layout{Mode: ModeV1}
	for _, e := range entries {
		if !e.IsDir() { // a symlink such as cpu -> cpu,cpuacct is no hierarchy of its own
			continue
		}
		dir := filepath.Join(root, e.Name())
		if e.Name() == "unified" {
			if data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers")); err == nil {
				l.Mode = ModeHybrid
				l.Mounts = append(l.Mounts, Mount{Mountpoint: dir, Root: "/", Controllers: strings.Fields(string(data)), Version: 2})
				continue
			}
		}
		l.Mounts = append(l.Mounts, Mount{Mountpoint: dir, Root: "/", Controllers: strings.Split(e.Name(), ","), Version: 1})
	}
	if len(l.Mounts) == 0 {
		return Layout{}, fmt.Errorf("no cgroup hierarchy under %s", root)
	}
	return l, nil
}
