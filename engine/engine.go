package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Options configure an Engine.
type Options struct {
	// Reader reads the runtime. Required.
	Reader Reader
	// Remover mutates the runtime; nil makes the engine read-only, and
	// Apply refuses.
	Remover Remover
	// Policy is the effective policy; New validates it.
	Policy Policy
	// StateDir holds the image records and the deletion journal; "" keeps
	// records in memory only and writes no journal.
	StateDir string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Statfs measures a filesystem by path; nil means the real statfs.
	Statfs func(path string) (FsStats, error)
	// RootFsPath is the root filesystem to report; "" means "/".
	RootFsPath string
	// PodSource reports the API server's pods; nil means not ready.
	PodSource func(ctx context.Context) (PodSource, error)
	// ScanLogs makes snapshots list pod log directories and
	// /var/log/containers symlinks for log GC.
	ScanLogs bool
	// ContainerLogsDir overrides /var/log/containers (tests).
	ContainerLogsDir string
	// Logger receives Info per deletion and Debug per item; nil discards.
	Logger *slog.Logger
}

// ErrReadOnly is returned by Apply on an engine without a Remover.
var ErrReadOnly = errors.New("read-only: this engine cannot remove anything")
