package engine

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
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
// fs), sorted by signal. A threshold that does not parse, or an inode
// signal on a filesystem that reports no inodes, is left out.
func checkDiskReserve(s Snapshot, p DiskPolicy) DiskReserve {
	threshold := max(p.ThresholdMiB, 0)
	d := DiskReserve{ThresholdMiB: threshold, ImageFs: checkReserve(s.ImageFs, threshold)}
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
		t, err := ParseThreshold(v, capacity)
		if err != nil {
			continue
		}
		d.Eviction = append(d.Eviction, EvictionLine{
			Signal: sig, Threshold: v, Inodes: inodes, ThresholdAmount: t,
			Available: available, Crossed: available < t,
		})
	}
	return d
}

// checkReserve is diskSpaceManager.isSpaceAvailable for one filesystem.
func checkReserve(fs FsStats, thresholdMiB int64) FsReserve {
	r := FsReserve{OK: true, AvailableBytes: fs.AvailableBytes}
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

// quantitySuffixes are the Kubernetes quantity suffixes ParseThreshold
// knows: binary (Ki..Ei) and decimal (k..E).
var quantitySuffixes = map[string]*big.Int{
	"Ki": pow(2, 10), "Mi": pow(2, 20), "Gi": pow(2, 30), "Ti": pow(2, 40), "Pi": pow(2, 50), "Ei": pow(2, 60),
	"k": pow(10, 3), "M": pow(10, 6), "G": pow(10, 9), "T": pow(10, 12), "P": pow(10, 15), "E": pow(10, 18),
}

func pow(b, e int64) *big.Int { return new(big.Int).Exp(big.NewInt(b), big.NewInt(e), nil) }

// ParseThreshold resolves an eviction threshold against a capacity: a
// percentage ("15%", "7.5%") is that share of capacity, rounded down as the
// kubelet's int64(float(capacity)*pct) is; a quantity ("1Gi", "500Mi",
// "100M", "1024", "1.5Gi") is a number of bytes (or inodes), rounded up as
// resource.Quantity.Value does. Only the suffixes Ki, Mi, Gi, Ti, Pi, Ei,
// k, M, G, T, P and E are known; exponents and milli-units are not. A
// negative value, a percentage above 100 or a value beyond int64 is an
// error.
func ParseThreshold(v string, capacity int64) (int64, error) {
	s := strings.TrimSpace(v)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		r, err := parseDecimal(pct)
		if err != nil {
			return 0, fmt.Errorf("threshold %q: %w", v, err)
		}
		if r.Cmp(big.NewRat(100, 1)) > 0 {
			return 0, fmt.Errorf("threshold %q: percentage above 100", v)
		}
		r.Mul(r, new(big.Rat).SetInt64(max(capacity, 0)))
		r.Quo(r, big.NewRat(100, 1))
		return new(big.Int).Quo(r.Num(), r.Denom()).Int64(), nil
	}
	num, mult := s, big.NewInt(1)
	for suf, m := range quantitySuffixes {
		if n, ok := strings.CutSuffix(s, suf); ok && len(suf) > len(s)-len(num) {
			num, mult = n, m
		}
	}
	r, err := parseDecimal(num)
	if err != nil {
		return 0, fmt.Errorf("threshold %q: %w", v, err)
	}
	r.Mul(r, new(big.Rat).SetInt(mult))
	// Round up to a whole unit, as resource.Quantity.Value does.
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 0, fmt.Errorf("threshold %q: too large", v)
	}
	return q.Int64(), nil
}

// errNotDecimal is a threshold number that is not a plain non-negative
// decimal.
var errNotDecimal = errors.New("want a non-negative decimal number with an optional suffix (Ki, Mi, Gi, Ti, k, M, G, T) or a percentage")

// parseDecimal parses a plain non-negative decimal ("12", "7.5"): digits,
// at most one point, no sign, no exponent.
func parseDecimal(s string) (*big.Rat, error) {
	if s == "" || s == "." {
		return nil, errNotDecimal
	}
	dot := false
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
		case c == '.' && !dot:
			dot = true
		default:
			return nil, errNotDecimal
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, errNotDecimal
	}
	return r, nil
}
