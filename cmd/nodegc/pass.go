package main

import (
	"github.com/spf13/pflag"

	"github.com/nodegc/nodegc/engine"
)

// passFlags choose the kind of pass: images, containers, both (the
// default), or the eviction manager's reclaim-all.
type passFlags struct {
	Images     bool
	Containers bool
	ReclaimAll bool
}

// addPassFlags registers --images, --containers and --reclaim-all.
func addPassFlags(fs *pflag.FlagSet, p *passFlags) {
	fs.BoolVar(&p.Images, "images", false, "image GC only (with --containers: both, the default)")
	fs.BoolVar(&p.Containers, "containers", false, "container, sandbox and log GC only (with --images: both, the default)")
	fs.BoolVar(&p.ReclaimAll, "reclaim-all", false,
		"the eviction manager's reclaim: every dead container of terminated pods, then every unused, unpinned image older than the minimum TTL, whatever the thresholds")
}

// kind returns the pass kind the flags select.
func (p passFlags) kind() (engine.PassKind, error) {
	switch {
	case p.ReclaimAll && (p.Images || p.Containers):
		return "", usageErrorf("--reclaim-all: cannot be combined with --images or --containers")
	case p.ReclaimAll:
		return engine.PassReclaimAll, nil
	case p.Images && !p.Containers:
		return engine.PassImages, nil
	case p.Containers && !p.Images:
		return engine.PassContainers, nil
	}
	return engine.PassFull, nil
}
