package model

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// ImagePolicy is the kubelet's ImageGCPolicy.
type ImagePolicy struct {
	// HighThresholdPercent is the image-filesystem usage at or above which
	// image GC runs (--image-gc-high-threshold, default 85).
	HighThresholdPercent int
	// LowThresholdPercent is the usage image GC frees down to
	// (--image-gc-low-threshold, default 80).
	LowThresholdPercent int
	// MinAge is how long after it is first detected an image is protected
	// (--minimum-image-ttl-duration, default 2m).
	MinAge time.Duration
	// MaxAge removes images idle for longer, whatever the usage
	// (--image-maximum-gc-age, 0 = off).
	MaxAge time.Duration
}

// ContainerPolicy is the kubelet's GCPolicy for dead containers.
type ContainerPolicy struct {
	// MinAge is the minimum age of a dead container before it may go
	// (--minimum-container-ttl-duration, default 0).
	MinAge time.Duration
	// MaxPerPodContainer is how many dead instances each (pod, container
	// name) keeps (--maximum-dead-containers-per-container, default 1; < 0
	// no limit).
	MaxPerPodContainer int
	// MaxContainers caps the dead containers on the node
	// (--maximum-dead-containers, default -1 = no limit).
	MaxContainers int
}

// DiskPolicy is the old diskSpaceManager's reserve plus the eviction
// manager's hard thresholds, shown beside it.
type DiskPolicy struct {
	// ThresholdMiB: nodegc reports a filesystem with less available as
	// below the old diskSpaceManager threshold
	// (--low-diskspace-threshold-mb, default 256).
	ThresholdMiB int64
	// EvictionHard is the kubelet's evictionHard map, signal to threshold
	// ("15%" or a quantity such as "1Gi").
	EvictionHard map[string]string
}

// Policy is the whole effective GC policy.
type Policy struct {
	Image     ImagePolicy
	Container ContainerPolicy
	Disk      DiskPolicy
	// PodLogsDir is the kubelet's podLogsDir (default /var/log/pods).
	PodLogsDir string
}

// Kubelet defaults, from pkg/kubelet/apis/config/v1beta1/defaults.go and the
// kubelet's flags.
const (
	DefaultImageGCHighThresholdPercent = 85
	DefaultImageGCLowThresholdPercent  = 80
	DefaultImageMinimumGCAge           = 2 * time.Minute
	DefaultContainerMinAge             = 0
	DefaultMaxPerPodContainer          = 1
	DefaultMaxContainers               = -1
	DefaultLowDiskSpaceThresholdMiB    = 256
	DefaultPodLogsDir                  = "/var/log/pods"
	// ContainerLogsDir holds the kubelet's /var/log/containers symlinks.
	ContainerLogsDir = "/var/log/containers"
	// ImageGCPeriod and ContainerGCPeriod are the kubelet's periods.
	ImageGCPeriod     = 5 * time.Minute
	ContainerGCPeriod = time.Minute
)

// DefaultEvictionHard returns the kubelet's default hard eviction thresholds.
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		"memory.available":  "100Mi",
		"nodefs.available":  "10%",
		"nodefs.inodesFree": "5%",
		"imagefs.available": "15%",
	}
}

// DefaultPolicy returns the kubelet's defaults.
func DefaultPolicy() Policy {
	return Policy{
		Image: ImagePolicy{
			HighThresholdPercent: DefaultImageGCHighThresholdPercent,
			LowThresholdPercent:  DefaultImageGCLowThresholdPercent,
			MinAge:               DefaultImageMinimumGCAge,
		},
		Container: ContainerPolicy{
			MinAge:             DefaultContainerMinAge,
			MaxPerPodContainer: DefaultMaxPerPodContainer,
			MaxContainers:      DefaultMaxContainers,
		},
		Disk: DiskPolicy{
			ThresholdMiB: DefaultLowDiskSpaceThresholdMiB,
			EvictionHard: DefaultEvictionHard(),
		},
		PodLogsDir: DefaultPodLogsDir,
	}
}

// PolicyError is a policy value out of range. Field is the kubelet flag
// name, so the operator knows what to change.
type PolicyError struct {
	Field string
	Msg   string
}

func (e *PolicyError) Error() string { return fmt.Sprintf("--%s: %s", e.Field, e.Msg) }

// Validate checks the image policy as NewImageGCManager does: range errors
// first, then the relation between low and high, then MaxAge against MinAge.
func (p ImagePolicy) Validate() error {
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		return &PolicyError{"image-gc-high-threshold", fmt.Sprintf("must be in [0, 100], got %d", p.HighThresholdPercent)}
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		return &PolicyError{"image-gc-low-threshold", fmt.Sprintf("must be in [0, 100], got %d", p.LowThresholdPercent)}
	}
	if p.LowThresholdPercent > p.HighThresholdPercent {
		return &PolicyError{"image-gc-low-threshold", fmt.Sprintf("%d must not exceed --image-gc-high-threshold %d", p.LowThresholdPercent, p.HighThresholdPercent)}
	}
	if p.MinAge < 0 {
		return &PolicyError{"minimum-image-ttl-duration", fmt.Sprintf("must not be negative, got %s", p.MinAge)}
	}
	if p.MaxAge < 0 {
		return &PolicyError{"image-maximum-gc-age", fmt.Sprintf("must not be negative, got %s", p.MaxAge)}
	}
	if p.MaxAge > 0 && p.MaxAge <= p.MinAge {
		return &PolicyError{"image-maximum-gc-age", fmt.Sprintf("%s must be greater than --minimum-image-ttl-duration %s", p.MaxAge, p.MinAge)}
	}
	return nil
}

// PeriodicDisabled reports whether periodic image GC is off, as in the
// kubelet: a high threshold of 100 with no MaxAge.
func (p ImagePolicy) PeriodicDisabled() bool {
	return p.HighThresholdPercent == 100 && p.MaxAge == 0
}

// Validate checks the container policy.
func (p ContainerPolicy) Validate() error {
	if p.MinAge < 0 {
		return &PolicyError{"minimum-container-ttl-duration", fmt.Sprintf("must not be negative, got %s", p.MinAge)}
	}
	return nil
}

// Validate checks the disk policy.
func (p DiskPolicy) Validate() error {
	if p.ThresholdMiB < 0 {
		return &PolicyError{"low-diskspace-threshold-mb", fmt.Sprintf("must not be negative, got %d", p.ThresholdMiB)}
	}
	return nil
}

// Validate checks the whole policy; the first error names its flag.
func (p Policy) Validate() error {
	if err := p.Image.Validate(); err != nil {
		return err
	}
	if err := p.Container.Validate(); err != nil {
		return err
	}
	if err := p.Disk.Validate(); err != nil {
		return err
	}
	if p.PodLogsDir != "" { // "" is DefaultPodLogsDir
		if err := CheckPodLogsDir(p.PodLogsDir); err != nil {
			return &PolicyError{"pod-logs-dir", err.Error()}
		}
	}
	return nil
}

// CheckPodLogsDir rejects a pod logs directory that log GC must not scan:
// a relative path (relative to whatever directory nodegc was started in),
// or a system directory (see systemDir), whose entries log GC would take
// for pods' and whose files for their logs. Policy.Validate applies it; a
// reader of the kubelet's config applies it to the podLogsDir field, to
// name the field in its error. CheckPodLogsDirOnDisk checks the directory
// itself.
func CheckPodLogsDir(dir string) error {
	switch {
	case !filepath.IsAbs(dir):
		return fmt.Errorf("must be an absolute path, got %q", dir)
	case filepath.Clean(dir) == "/":
		return fmt.Errorf("must not be the root directory, got %q", dir)
	case systemDir(filepath.Clean(dir)):
		return fmt.Errorf("must not be a system directory, got %q", dir)
	}
	return nil
}

// systemDirs are directories that hold the node's own files and are never
// a pod logs directory, nor is anything inside the ones marked true.
var systemDirs = map[string]bool{
	"/etc": true, "/usr": true, "/bin": true, "/sbin": true, "/boot": true, "/dev": true,
	"/proc": true, "/sys": true, "/root": true,
	"/var": false, "/var/lib": false, "/var/log": false, "/var/tmp": false, "/var/run": false,
	"/var/lib/kubelet": false, "/var/lib/containerd": false, "/home": false, "/run": false,
	"/tmp": false, "/opt": false, "/srv": false, "/mnt": false, "/media": false,
}

// systemDir reports whether a clean, absolute dir is a system directory:
// one of systemDirs, inside one marked true, or in /lib* (lib32, lib64,
// libexec...).
func systemDir(dir string) bool {
	if _, ok := systemDirs[dir]; ok {
		return true
	}
	top := dir
	if i := strings.IndexByte(dir[1:], '/'); i >= 0 {
		top = dir[:i+1]
	}
	return systemDirs[top] || strings.HasPrefix(top, "/lib")
}

// policyJSON is the effective policy as it appears in a plan, with
// durations as Go duration strings.
type policyJSON struct {
	ImageGCHighThresholdPercent   int               `json:"imageGCHighThresholdPercent"`
	ImageGCLowThresholdPercent    int               `json:"imageGCLowThresholdPercent"`
	ImageMinimumGCAge             string            `json:"imageMinimumGCAge"`
	ImageMaximumGCAge             string            `json:"imageMaximumGCAge"`
	MinimumContainerTTLDuration   string            `json:"minimumContainerTTLDuration"`
	MaxDeadContainersPerContainer int               `json:"maximumDeadContainersPerContainer"`
	MaxDeadContainers             int               `json:"maximumDeadContainers"`
	LowDiskSpaceThresholdMB       int64             `json:"lowDiskSpaceThresholdMB"`
	EvictionHard                  map[string]string `json:"evictionHard,omitempty"`
	PodLogsDir                    string            `json:"podLogsDir"`
}

// MarshalJSON writes the policy under the kubelet's configuration names.
func (p Policy) MarshalJSON() ([]byte, error) {
	return json.Marshal(policyJSON{
		ImageGCHighThresholdPercent:   p.Image.HighThresholdPercent,
		ImageGCLowThresholdPercent:    p.Image.LowThresholdPercent,
		ImageMinimumGCAge:             p.Image.MinAge.String(),
		ImageMaximumGCAge:             p.Image.MaxAge.String(),
		MinimumContainerTTLDuration:   p.Container.MinAge.String(),
		MaxDeadContainersPerContainer: p.Container.MaxPerPodContainer,
		MaxDeadContainers:             p.Container.MaxContainers,
		LowDiskSpaceThresholdMB:       p.Disk.ThresholdMiB,
		EvictionHard:                  p.Disk.EvictionHard,
		PodLogsDir:                    p.PodLogsDir,
	})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Policy) UnmarshalJSON(b []byte) error {
	var j policyJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var err error
	dur := func(field, s string) time.Duration {
		if s == "" || err != nil {
			return 0
		}
		d, e := time.ParseDuration(s)
		if e != nil {
			err = fmt.Errorf("policy.%s: %w", field, e)
		}
		return d
	}
	*p = Policy{
		Image: ImagePolicy{
			HighThresholdPercent: j.ImageGCHighThresholdPercent,
			LowThresholdPercent:  j.ImageGCLowThresholdPercent,
			MinAge:               dur("imageMinimumGCAge", j.ImageMinimumGCAge),
			MaxAge:               dur("imageMaximumGCAge", j.ImageMaximumGCAge),
		},
		Container: ContainerPolicy{
			MinAge:             dur("minimumContainerTTLDuration", j.MinimumContainerTTLDuration),
			MaxPerPodContainer: j.MaxDeadContainersPerContainer,
			MaxContainers:      j.MaxDeadContainers,
		},
		Disk:       DiskPolicy{ThresholdMiB: j.LowDiskSpaceThresholdMB, EvictionHard: j.EvictionHard},
		PodLogsDir: j.PodLogsDir,
	}
	return err
}
