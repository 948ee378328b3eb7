package engine

import (
	"context"
	"fmt"
	"hash/maphash"
)

// containersSeed makes the fingerprints of one process comparable.
var containersSeed = maphash.MakeSeed()

// imagesFingerprint sums a hash of every image's ID and tags, so a pull,
// a removal or a tag moved to another image changes it.
func imagesFingerprint(imgs []Image) uint64 {
	var sum uint64
	for _, img := range imgs {
		var h maphash.Hash
		h.SetSeed(containersSeed)
		h.WriteString(img.ID)
		for _, t := range img.RepoTags {
			h.WriteByte(0)
			h.WriteString(t)
		}
		sum += h.Sum64()
	}
	return sum
}

// containersFingerprint sums a hash of every container's ID and state, so
// the runtime's listing order does not matter and any container created,
// removed or changing state changes it (a collision aside).
func containersFingerprint(cs []Container) uint64 {
	var sum uint64
	for _, c := range cs {
		var h maphash.Hash
		h.SetSeed(containersSeed)
		h.WriteString(c.ID)
		h.WriteByte(0)
		h.WriteString(string(c.State))
		sum += h.Sum64()
	}
	return sum
}

// ContainersChanged lists the node's containers alone and reports whether
// they differ (one created, removed, or in another state) from the last
// snapshot's, which it then remembers. It is the light poll of a reader
// that has no event stream: one container listing instead of a snapshot
// and a plan, and a full refresh only when something changed. Before any
// snapshot it reports true. It does not wait for a pass in flight.
func (e *Engine) ContainersChanged(ctx context.Context) (bool, error) {
	cs, err := e.o.Reader.ListContainers(ctx)
	if err != nil {
		return false, fmt.Errorf("list containers: %w", err)
	}
	fp := containersFingerprint(cs)
	e.mu.Lock()
	defer e.mu.Unlock()
	changed := !e.haveFingerprint || fp != e.fingerprint
	e.fingerprint, e.haveFingerprint = fp, true
	return changed, nil
}

// ImagesChanged lists the node's images alone and reports whether they
// differ (one pulled, removed or retagged) from the last snapshot's, which
// it then remembers: the check a dashboard makes when the image
// filesystem's usage moved, since no CRI event reports an image. Before
// any snapshot it reports true. It does not wait for a pass in flight.
func (e *Engine) ImagesChanged(ctx context.Context) (bool, error) {
	imgs, err := e.o.Reader.ListImages(ctx)
	if err != nil {
		return false, fmt.Errorf("list images: %w", err)
	}
	fp := imagesFingerprint(imgs)
	e.mu.Lock()
	defer e.mu.Unlock()
	changed := !e.haveImagesFingerprint || fp != e.imagesFingerprint
	e.imagesFingerprint, e.haveImagesFingerprint = fp, true
	return changed, nil
}
