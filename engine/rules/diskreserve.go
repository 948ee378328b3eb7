package rules

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nodegc/nodegc/engine/model"
	"github.com/nodegc/nodegc/internal/quantity"
)

// checkDiskReserve is the old diskSpaceManager (pkg/kubelet/disk_manager.go,
// removed in 1.7) as a pure function: a filesystem with less than
// ThresholdMiB MiB available is out of disk. It checks the image fs and,
// when the snapshot has one, the root fs (RootFs is nil otherwise). As in
// the kubelet, a capacity of zero or less or a negative available is an
// error and reports "enough space" (OK with Error set).
//
// Beside it are the eviction manager's modern equivalents: each
// imagefs.* and nodefs.* signal of p.EvictionHard resolved to bytes or
// inodes (nodefs falls back to the image fs when the snapshot has no root
// fs), sorted by signal. A threshold that does not parse, "0%" and "100%"
// (which the kubelet ignores), or an inode signal on a filesystem that
// reports no inodes, is left out.
func checkDiskReserve(s model.Snapshot, p model.DiskPolicy) model.DiskReserve {
	threshold := max(p.ThresholdMiB, 0)
	d := model.DiskReserve{ThresholdMiB: threshold, ImageFs: checkReserve(s.ImageFs, threshold)}
	if s.RootFs != nil {
		r := checkReserve(*s.RootFs, threshold)
		d.RootFs = &r
	}

	signals := make([]string, 0, len(p.EvictionHard))
	for sig := range p.EvictionHard {
		signals = append(signals, sig)
	}
	slices.Sort(signals)
	for _, sig := range signals {
		fs := s.ImageFs
		switch {
		case strings.HasPrefix(sig, "imagefs."):
		case strings.HasPrefix(sig, "nodefs."):
			if s.RootFs != nil {
				fs = *s.RootFs
			}
		default:
			continue // memory.available, pid.available: not a filesystem
		}
		var capacity, available int64
		inodes := false
		switch strings.TrimLeft(sig[strings.IndexByte(sig, '.'):], ".") {
		case "available":
			capacity, available = fs.CapacityBytes, fs.AvailableBytes
		case "inodesFree":
			capacity, available, inodes = fs.Inodes, fs.InodesFree, true
		default:
			continue
		}
		if capacity <= 0 {
			continue
		}
		v := p.EvictionHard[sig]
		if t := strings.TrimSpace(v); t == "0%" || t == "100%" {
			// The kubelet ignores both (parseThresholdStatement in
			// pkg/kubelet/eviction/helpers.go): no signal.
			continue
		}
		t, err := ParseThreshold(v, capacity)
		if err != nil {
			continue
		}
		d.Eviction = append(d.Eviction, model.EvictionLine{
			Signal: sig, Threshold: v, Inodes: inodes, ThresholdAmount: t,
			Available: available, Crossed: available < t,
		})
	}
	return d
}

// checkReserve is diskSpaceManager.isSpaceAvailable for one filesystem.
func checkReserve(fs model.FsStats, thresholdMiB int64) model.FsReserve {
	r := model.FsReserve{OK: true, AvailableBytes: fs.AvailableBytes}
	switch {
	case fs.CapacityBytes <= 0:
		r.Error = fmt.Sprintf("invalid capacity %d on %q", fs.CapacityBytes, fs.Mountpoint)
	case fs.AvailableBytes < 0:
		r.Error = fmt.Sprintf("invalid available %d on %q", fs.AvailableBytes, fs.Mountpoint)
	default:
		// available >= thresholdMiB MiB, without the overflow of
		// thresholdMiB<<20 for an absurd threshold.
		r.OK = fs.AvailableBytes>>20 >= thresholdMiB
	}
	return r
}

// ParseThreshold resolves an eviction threshold against a capacity as the
// kubelet's eviction manager does (pkg/kubelet/eviction/helpers.go
// parseThresholdStatement and parsePercentage,
// pkg/kubelet/eviction/api/types.go GetThresholdQuantity):
//
//   - a percentage ("15%", "7.5%") is strconv.ParseFloat of what precedes
//     the "%" at float32 precision, divided by 100 in float32; below 0% or
//     above 100% is an error. It resolves to
//     int64(float64(capacity) × fraction), so rounded down at float32
//     precision: 70% of 1000 is 699.
//   - anything else is a resource.ParseQuantity quantity ("1Gi", "500Mi",
//     "1e3", "100m"); zero or negative is an error. It resolves to its
//     Value, rounded up: the kubelet signals when available < threshold,
//     which for whole bytes or inodes is available < the rounded-up value.
//
// Spaces around v are dropped, as the kubelet's --eviction-hard flag drops
// them. Unlike the kubelet, "NaN%" (which it accepts and resolves through
// an undefined float conversion) and a quantity of 8Ei or more (which
// resource.ParseQuantity caps) are errors.
func ParseThreshold(v string, capacity int64) (int64, error) {
	s := strings.TrimSpace(v)
	if strings.HasSuffix(s, "%") {
		f, err := strconv.ParseFloat(strings.TrimRight(s, "%"), 32)
		if err != nil || math.IsNaN(f) {
			return 0, fmt.Errorf("threshold %q: not a percentage such as 15%%", v)
		}
		pct := float32(f) / 100
		if pct < 0 {
			return 0, fmt.Errorf("threshold %q: percentage below 0", v)
		}
		if pct > 1 {
			return 0, fmt.Errorf("threshold %q: percentage above 100", v)
		}
		t := float64(max(capacity, 0)) * float64(pct)
		if t >= math.MaxInt64 {
			// 2^63 and above: int64(t) is undefined.
			return math.MaxInt64, nil
		}
		return int64(t), nil
	}
	q, err := quantity.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("threshold %q: %w", v, err)
	}
	if q.Sign() <= 0 {
		return 0, fmt.Errorf("threshold %q: must be positive", v)
	}
	n, err := quantity.Value(q)
	if err != nil {
		return 0, fmt.Errorf("threshold %q: %w", v, err)
	}
	return n, nil
}
