package rules

import "fmt"

// The kubelet's event messages, worded as kubelet v1.36.3 words them, so
// that an operator who greps the kubelet's events finds nodegc's too.

// InvalidDiskCapacityMessage is the InvalidDiskCapacity message of
// image_gc_manager.go GarbageCollect ("invalid capacity 0 on image
// filesystem"); the kubelet only sees 0, nodegc prints what it saw.
func InvalidDiskCapacityMessage(capacity int64) string {
	return fmt.Sprintf("invalid capacity %d on image filesystem", capacity)
}

// FreeDiskSpaceFailedMessage is the FreeDiskSpaceFailed message of
// image_gc_manager.go GarbageCollect: the usage when the space pass ran,
// the capacity (formatSize) and the bytes the space pass freed.
func FreeDiskSpaceFailedMessage(usagePercent int, capacity, freed int64) string {
	return fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %s used). "+
		"Failed to free sufficient space by deleting unused images (freed %d bytes). "+
		"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
		usagePercent, formatSize(capacity), freed)
}

// formatSize is the kubelet's formatSize (image_gc_manager.go): bytes
// below 1 KiB, else one decimal in KiB, MiB, GiB or TiB.
func formatSize(sizeBytes int64) string {
	const (
		kib = 1024
		mib = 1024 * kib
		gib = 1024 * mib
		tib = 1024 * gib
	)
	size := float64(sizeBytes)
	switch {
	case size < kib:
		return fmt.Sprintf("%d B", int64(size))
	case size < mib:
		return fmt.Sprintf("%.1f KiB", size/kib)
	case size < gib:
		return fmt.Sprintf("%.1f MiB", size/mib)
	case size < tib:
		return fmt.Sprintf("%.1f GiB", size/gib)
	default:
		return fmt.Sprintf("%.1f TiB", size/tib)
	}
}
