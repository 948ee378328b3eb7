// Package firstseen tells when nodegc has no earlier record of the
// node's images: every image then counts as first seen at one time (now,
// or when nodegc started), and none is old enough to remove until the
// minimum age has passed. plan, gc and the dashboard say so, with when the
// first images become eligible, instead of a silent "frees 0 B".
package firstseen

import (
	"time"

	"github.com/nodegc/nodegc/engine"
)

// Hold reports whether every image of s counts as first seen at one time,
// since (an image without a record counts as seen at now), and that time
// plus minAge, eligible, is still after now.
func Hold(s engine.Snapshot, minAge time.Duration, now time.Time) (since, eligible time.Time, ok bool) {
	if len(s.Images) == 0 {
		return time.Time{}, time.Time{}, false
	}
	first := make(map[string]time.Time, len(s.ImageRecords))
	for _, r := range s.ImageRecords {
		first[r.ID] = r.FirstDetected
	}
	for i, im := range s.Images {
		t, found := first[im.ID]
		if !found {
			t = now
		}
		if i == 0 {
			since = t
		} else if !t.Equal(since) {
			return time.Time{}, time.Time{}, false
		}
	}
	eligible = since.Add(minAge)
	return since, eligible, eligible.After(now)
}
