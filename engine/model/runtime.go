package model

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is wrapped by Reader and Remover errors for an object the
// runtime does not have. The executor counts a removal that fails with it as
// already gone.
var ErrNotFound = errors.New("not found")

// ErrUnavailable is wrapped by Reader and Remover errors when the runtime
// cannot be reached.
var ErrUnavailable = errors.New("runtime unavailable")

// Reader reads a CRI runtime. It has no mutating method, so code given only
// a Reader (nodegc plan, --read-only) cannot delete anything.
type Reader interface {
	// Info names the runtime and its sandbox images.
	Info(ctx context.Context) (RuntimeInfo, error)
	ListImages(ctx context.Context) ([]Image, error)
	// ImageStatus returns the image, or an error wrapping ErrNotFound.
	ImageStatus(ctx context.Context, id string) (Image, error)
	ListContainers(ctx context.Context) ([]Container, error)
	// ContainerStatus returns the container, or an error wrapping ErrNotFound.
	ContainerStatus(ctx context.Context, id string) (Container, error)
	ListSandboxes(ctx context.Context) ([]Sandbox, error)
	// SandboxStatus returns the sandbox, or an error wrapping ErrNotFound.
	SandboxStatus(ctx context.Context, id string) (Sandbox, error)
	// ImageFs reports the image filesystem as the runtime sees it: its
	// mountpoint and the bytes and inodes its images use.
	ImageFs(ctx context.Context) (ImageFsUsage, error)
}

// SandboxInfoReader is a Reader that can name the runtime and its sandbox
// images from a sandbox listing the caller already has, instead of listing
// the READY sandboxes again: collect uses it, so that a snapshot lists the
// sandboxes once (issue 22: a plan costs one listing). Info's rules hold:
// every READY sandbox of the listing has its image learned, or it fails.
type SandboxInfoReader interface {
	InfoFor(ctx context.Context, sandboxes []Sandbox) (RuntimeInfo, error)
}

// ImageFsUsage is the runtime's ImageFsInfo: the engine measures the
// filesystem at Mountpoint with Options.Statfs.
type ImageFsUsage struct {
	Mountpoint string
	UsedBytes  int64
	InodesUsed int64
}

// Remover mutates a CRI runtime. Every method is idempotent from the
// executor's point of view: an error wrapping ErrNotFound means the object
// is already gone.
type Remover interface {
	RemoveImage(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
	RemoveContainer(ctx context.Context, id string) error
	StopSandbox(ctx context.Context, id string) error
	RemoveSandbox(ctx context.Context, id string) error
}

// Runtime is a Reader that can also remove.
type Runtime interface {
	Reader
	Remover
}
