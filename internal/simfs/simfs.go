// Package simfs gives the engine a Statfs over a simulated node: the
// simulated image filesystem measures at its mountpoint, and any other
// path (the root fs) cannot be measured, so a snapshot leaves it out. The
// engine and the CRI adapter know nothing of simulated nodes; the demo's
// wiring and the tests above the socket hand them this.
package simfs

import (
	"fmt"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
)

// Statfs is engine.Options.Statfs for a simulated node whose image
// filesystem read returns.
func Statfs(read func() (simnode.FsStats, error)) func(string) (engine.FsStats, error) {
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

// Local is Statfs for a node in this process.
func Local(n *simnode.Node) func(string) (engine.FsStats, error) {
	return Statfs(func() (simnode.FsStats, error) { return n.ImageFs(), nil })
}
