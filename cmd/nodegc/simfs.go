package main

import (
	"context"
	"fmt"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simnode"
)

// simulatedStatfs is the engine's Statfs for a simulated node: the image
// filesystem's mountpoint measures as what read returns, and any other
// path (the root fs) cannot be measured, so a snapshot leaves it out.
// The engine and the CRI adapter know nothing of simulated nodes: only
// this wiring does.
func simulatedStatfs(read func() (simnode.FsStats, error)) func(string) (engine.FsStats, error) {
	return func(path string) (engine.FsStats, error) {
		fs, err := read()
		if err != nil {
			return engine.FsStats{}, err
		}
		if path != fs.Mountpoint {
			return engine.FsStats{}, fmt.Errorf("statfs %s: not on the simulated node", path)
		}
		return engine.FsStats{
			Mountpoint: fs.Mountpoint, CapacityBytes: fs.CapacityBytes, AvailableBytes: fs.AvailableBytes,
			UsedBytes: fs.UsedBytes, Inodes: fs.Inodes, InodesFree: fs.InodesFree,
		}, nil
	}
}

// remoteSimulatedFs reads a simulated node's image filesystem over its
// socket (nodegc simnode in another process): one verbose Status call,
// bounded by the client's read timeout.
func remoteSimulatedFs(c *cri.Client) func() (simnode.FsStats, error) {
	return func() (simnode.FsStats, error) {
		info, err := c.StatusInfo(context.Background())
		if err != nil {
			return simnode.FsStats{}, fmt.Errorf("image filesystem: %w", err)
		}
		fs, ok, err := simnode.ImageFsFromInfo(info)
		if err == nil && !ok {
			err = fmt.Errorf("image filesystem: the runtime at %s no longer reports a simulated filesystem", c.Endpoint())
		}
		return fs, err
	}
}

// localSimulatedFs reads an in-process simulated node's image filesystem
// (--demo).
func localSimulatedFs(n *simnode.Node) func() (simnode.FsStats, error) {
	return func() (simnode.FsStats, error) { return n.ImageFs(), nil }
}
