package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ViewWindow is the longest a pass trusts its view of the node's containers
// and sandboxes. The executor re-checks each item against that view, not
// against a fresh list per item (which made a pass cost removals times
// containers): a view older than ViewWindow is listed again before the
// re-check, and a container event (Engine.ContainerEvent) makes the next
// re-check list again at once.
//
// The contract: the view an item is checked against was taken at most
// ViewWindow before the check began, or after the last container event
// reported before the check began; the runtime call that removes the item
// follows that check directly (only the item's own status call and its
// journal intent line lie between). Without an event stream, a container
// created on an image in the last ViewWindow (plus one status call) before
// the image's removal can be missed, and the runtime then refuses nothing:
// containerd removes an image a created container uses. Keep the window
// short; the runtime's event stream closes the gap.
const ViewWindow = 100 * time.Millisecond

// nodeView is the executor's cached list of containers and sandboxes, with
// the indexes its re-checks need: the images containers use (by any of
// their references) and the containers of each sandbox.
type nodeView struct {
	r     Reader
	clock func() time.Time // monotonic wall clock, never the engine's fake one
	gen   *atomic.Uint64   // bumped by every container event

	mu        sync.Mutex
	at        time.Time
	seenGen   uint64
	valid     bool
	refreshes int
	// images maps every container's ImageID and ImageRef to the first
	// container that names it.
	images map[string]Container
	// bySandbox maps a sandbox ID to the first container that references it.
	bySandbox map[string]Container
	byID      map[string]Container
	byPodUID  map[string][]Container
	sandboxes map[string]Sandbox
}

// newNodeView returns an empty view that lists at its first use.
func newNodeView(r Reader, gen *atomic.Uint64) *nodeView {
	return &nodeView{r: r, clock: time.Now, gen: gen}
}

// invalidate makes the next use list again (a phase boundary: the executor
// has just removed containers the view still holds).
func (v *nodeView) invalidate() {
	v.mu.Lock()
	v.valid = false
	v.mu.Unlock()
}

// fresh returns the view, listing the node again first when it is older
// than ViewWindow, was invalidated, or a container event came since it was
// taken. Concurrent callers share one listing. The returned view must not
// be modified.
func (v *nodeView) fresh(ctx context.Context) (*nodeView, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	g := v.gen.Load()
	if v.valid && g == v.seenGen && v.clock().Sub(v.at) <= ViewWindow {
		return v, nil
	}
	at := v.clock()
	cs, err := v.r.ListContainers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	sbs, err := v.r.ListSandboxes(ctx)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	v.images = make(map[string]Container, len(cs))
	v.bySandbox = make(map[string]Container, len(sbs))
	v.byID = make(map[string]Container, len(cs))
	v.byPodUID = make(map[string][]Container, len(sbs))
	for _, c := range cs {
		for _, ref := range [2]string{c.ImageID, c.ImageRef} {
			if _, ok := v.images[ref]; ref != "" && !ok {
				v.images[ref] = c
			}
		}
		if _, ok := v.bySandbox[c.PodSandboxID]; !ok && c.PodSandboxID != "" {
			v.bySandbox[c.PodSandboxID] = c
		}
		v.byID[c.ID] = c
		if c.PodUID != "" {
			v.byPodUID[c.PodUID] = append(v.byPodUID[c.PodUID], c)
		}
	}
	v.sandboxes = make(map[string]Sandbox, len(sbs))
	for _, s := range sbs {
		v.sandboxes[s.ID] = s
	}
	v.at, v.seenGen, v.valid = at, g, true
	v.refreshes++
	return v, nil
}

// imageUser returns a container that uses img by its ID, a tag or a
// digest, in any state: the same rule as ImagesInUse, with one map lookup
// per reference.
func (v *nodeView) imageUser(img Image) (Container, bool) {
	if c, ok := v.images[img.ID]; ok && img.ID != "" {
		return c, true
	}
	for _, refs := range [2][]string{img.RepoTags, img.RepoDigests} {
		for _, ref := range refs {
			if c, ok := v.images[ref]; ok && ref != "" {
				return c, true
			}
		}
	}
	return Container{}, false
}
