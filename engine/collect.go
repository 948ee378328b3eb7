package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/nodegc/nodegc/engine/rules"
	"golang.org/x/sys/unix"
)

// Statfs measures the filesystem that holds path, as the kubelet's cadvisor
// does for the image and root filesystems: capacity and available (for an
// unprivileged writer) in bytes, and inodes.
func Statfs(path string) (FsStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return FsStats{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := int64(st.Bsize)
	return FsStats{
		Mountpoint:     path,
		CapacityBytes:  int64(st.Blocks) * bs,
		AvailableBytes: int64(st.Bavail) * bs,
		UsedBytes:      int64(st.Blocks-st.Bfree) * bs,
		Inodes:         int64(st.Files),
		InodesFree:     int64(st.Ffree),
	}, nil
}

// collect reads the runtime, the filesystems and (optionally) the log
// directories into a snapshot. It does not touch the image records.
func (e *Engine) collect(ctx context.Context) (Snapshot, error) {
	s := Snapshot{APIVersion: APIVersion, Kind: KindSnapshot, TakenAt: e.now()}
	// The images, the containers and the image filesystem are read
	// while the sandboxes and the runtime's info are: the calls are
	// independent reads, and a big node's listings take seconds to send
	// and decode. An error is the first one in the order the calls were
	// once made one after another, so it names the same call.
	var (
		wg                        sync.WaitGroup
		imgErr, ctrErr, fsErr     error
		sbErr, infoErr, sbErrLate error
	)
	wg.Add(3)
	go func() {
		defer wg.Done()
		s.Images, imgErr = e.o.Reader.ListImages(ctx)
	}()
	go func() {
		defer wg.Done()
		s.Containers, ctrErr = e.o.Reader.ListContainers(ctx)
	}()
	go func() {
		defer wg.Done()
		s.ImageFs, fsErr = e.ImageFs(ctx)
	}()
	// A reader that can learn the sandbox images from the snapshot's own
	// sandbox listing is given it, listed first; others list again.
	if r, ok := e.o.Reader.(SandboxInfoReader); ok {
		if s.Sandboxes, sbErr = e.o.Reader.ListSandboxes(ctx); sbErr == nil {
			s.Runtime, infoErr = r.InfoFor(ctx, s.Sandboxes)
		}
	} else {
		s.Runtime, infoErr = e.o.Reader.Info(ctx)
		s.Sandboxes, sbErrLate = e.o.Reader.ListSandboxes(ctx)
	}
	wg.Wait()
	switch {
	case sbErr != nil:
		return s, fmt.Errorf("list pod sandboxes: %w", sbErr)
	case infoErr != nil:
		return s, fmt.Errorf("runtime info: %w", infoErr)
	case imgErr != nil:
		return s, fmt.Errorf("list images: %w", imgErr)
	case ctrErr != nil:
		return s, fmt.Errorf("list containers: %w", ctrErr)
	case sbErrLate != nil:
		return s, fmt.Errorf("list pod sandboxes: %w", sbErrLate)
	case fsErr != nil:
		return s, fsErr
	}
	root := e.o.RootFsPath
	if root == "" {
		root = "/"
	}
	// A root fs that cannot be measured is left out (a simulated node's
	// Statfs knows only its image fs).
	if fs, err := e.statfs(root); err == nil {
		s.RootFs = &fs
	}
	if e.o.ScanLogs {
		s.Logs = e.scanLogs()
	}
	if e.o.PodSource != nil {
		var err error
		if s.PodSource, err = e.o.PodSource(ctx, s); err != nil {
			return s, fmt.Errorf("pod source: %w", err)
		}
	}
	return s, nil
}

// ImageFs measures the image filesystem now, without listing anything:
// one small runtime call and a statfs. The dashboard's usage gauge reads
// it between snapshots, to see the disk fill without re-listing the node.
// It is safe to call while a pass runs. The runtime names the
// mountpoint and Options.Statfs measures it, as the kubelet's cadvisor
// does (docs/design.md, "Dependencies").
func (e *Engine) ImageFs(ctx context.Context) (FsStats, error) {
	u, err := e.o.Reader.ImageFs(ctx)
	if err != nil {
		return FsStats{}, fmt.Errorf("image filesystem info: %w", err)
	}
	if u.Mountpoint == "" {
		return FsStats{}, fmt.Errorf("image filesystem info: the runtime reported no mountpoint")
	}
	mp := u.Mountpoint
	e.fsMount.Store(&mp)
	return e.measureImageFs(mp)
}

// RemeasureImageFs measures the image filesystem at the mountpoint the
// runtime named last (every snapshot and pass asks it again), with no
// runtime call: a statfs alone. The dashboard reads it every couple of
// seconds between snapshots to see images come and go, and the
// mountpoint does not move under a running runtime. Before the runtime
// has named one it is ImageFs.
func (e *Engine) RemeasureImageFs(ctx context.Context) (FsStats, error) {
	mp := e.fsMount.Load()
	if mp == nil {
		return e.ImageFs(ctx)
	}
	return e.measureImageFs(*mp)
}

// measureImageFs is the statfs of the image filesystem at mountpoint mp.
func (e *Engine) measureImageFs(mp string) (FsStats, error) {
	fs, err := e.statfs(mp)
	if err != nil {
		return FsStats{}, fmt.Errorf("image filesystem: %w", err)
	}
	return fs, nil
}

// scanLogs lists the pod log directories and the /var/log/containers
// symlinks. Unreadable directories yield empty lists: log GC then does
// nothing, which is safe.
func (e *Engine) scanLogs() *LogFiles {
	lf := &LogFiles{PodLogsDir: e.o.Policy.PodLogsDir, PodDirs: []string{}, ContainerLinks: []LogLink{}}
	if ents, err := os.ReadDir(lf.PodLogsDir); err == nil {
		for _, d := range ents {
			if d.IsDir() {
				lf.PodDirs = append(lf.PodDirs, d.Name())
			}
		}
	}
	dir := e.containerLogsDir()
	lf.ContainerLogsDir = dir
	if ents, err := os.ReadDir(dir); err == nil {
		for _, d := range ents {
			name := d.Name()
			if d.Type()&os.ModeSymlink == 0 || !strings.HasSuffix(name, ".log") {
				continue
			}
			p := filepath.Join(dir, name)
			target, _ := os.Readlink(p)
			_, err := os.Stat(p) // follows the link
			lf.ContainerLinks = append(lf.ContainerLinks, LogLink{Path: p, Target: target, ContainerID: rules.ContainerIDFromLink(p), Dangling: errors.Is(err, os.ErrNotExist)})
		}
	}
	slices.Sort(lf.PodDirs)
	return lf
}

// containerLogsDir is /var/log/containers unless overridden.
func (e *Engine) containerLogsDir() string {
	if e.o.ContainerLogsDir != "" {
		return e.o.ContainerLogsDir
	}
	return ContainerLogsDir
}
