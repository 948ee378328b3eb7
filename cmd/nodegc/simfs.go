package main

import (
	"context"
	"fmt"

	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simnode"
)

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
