package engine

import (
	"context"
	"fmt"
	"hash/maphash"
)

// fingerprintSeed makes the fingerprints of one process comparable.
var fingerprintSeed = maphash.MakeSeed()

// ContainersFingerprint sums a hash of every container's ID and state, so
// the runtime's listing order does not matter and any container created,
// removed or changing state changes it (a collision aside). Fingerprints
// compare within one process only.
func ContainersFingerprint(cs []Container) uint64 {
	var sum uint64
	for _, c := range cs {
		var h maphash.Hash
		h.SetSeed(fingerprintSeed)
		h.WriteString(c.ID)
		h.WriteByte(0)
		h.WriteString(string(c.State))
		sum += h.Sum64()
	}
	return sum
}

// ContainersChanged lists the node's containers alone and reports whether
// they differ (one created, removed, or in another state) from the ones
// whose ContainersFingerprint is since: the light poll of a reader without
// an event stream, one container listing instead of a snapshot and a
// plan, with a full refresh only when something changed. The caller keeps
// the fingerprint of what it shows, so a snapshot taken by someone else (a
// pass, a preview) cannot hide a change from it. It does not wait for a
// pass in flight.
func (e *Engine) ContainersChanged(ctx context.Context, since uint64) (bool, error) {
	cs, err := e.o.Reader.ListContainers(ctx)
	if err != nil {
		return false, fmt.Errorf("list containers: %w", err)
	}
	return ContainersFingerprint(cs) != since, nil
}
