package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ViewWindow is the longest a pass trusts its view of the node. The
// executor re-checks each item against that view (the containers, and for
// images the image list), not against a fresh list per item, which made a
// pass cost removals times containers: a view older than ViewWindow is
// listed again before the re-check, and a container event
// (Engine.ContainerEvent) makes the next re-check list again at once.
//
// The contract: the view an item is checked against was taken at most
// ViewWindow before the check began, and after the last container event
// reported before the check began; the runtime call that removes the item
// follows that check directly (for a container or a sandbox, only its own
// status call lies between). Without an event stream, a container created
// on an image less than ViewWindow before the image's removal can be
// missed, and containerd then removes an image a created container names.
// The window is kept short so that gap is small; the runtime's event
// stream closes it.
const ViewWindow = 100 * time.Millisecond

// nodeView is the executor's cached list of containers (and, for the image
// phase, images), with the indexes its re-checks need.
type nodeView struct {
	r     Reader
	clock func() time.Time // the wall clock, never the engine's fake one
	gen   *atomic.Uint64   // bumped by every container event

	mu        sync.Mutex
	at        time.Time
	seenGen   uint64
	valid     bool
	refreshes int
	// withImages is set once a re-check asked for images; from then on
	// every listing lists them too.
	withImages bool
	// users maps every container's ImageID and ImageRef to the first
	// container that names it.
	users map[string]Container
	// bySandbox maps a sandbox ID to the first container that references it.
	bySandbox map[string]Container
	byID      map[string]Container
	byPodUID  map[string][]Container
	images    map[string]Image
}

// newNodeView returns an empty view that lists at its first use.
func newNodeView(r Reader, gen *atomic.Uint64) *nodeView {
	return &nodeView{r: r, clock: time.Now, gen: gen}
}

// invalidate makes the next use list again (a phase boundary: the executor
// has just removed what the view still holds).
func (v *nodeView) invalidate() {
	v.mu.Lock()
	v.valid = false
	v.mu.Unlock()
}

// fresh returns the view, listing the node again first when it is older
// than ViewWindow, was invalidated, or a container event came since it was
// taken; images asks for the image list too. Concurrent callers share one
// listing. The returned view must not be modified.
func (v *nodeView) fresh(ctx context.Context, images bool) (*nodeView, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	g := v.gen.Load()
	if v.valid && g == v.seenGen && (v.withImages || !images) && v.clock().Sub(v.at) <= ViewWindow {
		return v, nil
	}
	v.withImages = v.withImages || images
	at := v.clock()
	cs, err := v.r.ListContainers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var imgs []Image
	if v.withImages {
		if imgs, err = v.r.ListImages(ctx); err != nil {
			return nil, fmt.Errorf("list images: %w", err)
		}
	}
	v.users = make(map[string]Container, len(cs))
	v.bySandbox = make(map[string]Container, len(cs)/2)
	v.byID = make(map[string]Container, len(cs))
	v.byPodUID = make(map[string][]Container, len(cs)/2)
	for _, c := range cs {
		for _, ref := range [2]string{c.ImageID, c.ImageRef} {
			if _, ok := v.users[ref]; ref != "" && !ok {
				v.users[ref] = c
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
	v.images = make(map[string]Image, len(imgs))
	for _, img := range imgs {
		v.images[img.ID] = img
	}
	v.at, v.seenGen, v.valid = at, g, true
	v.refreshes++
	return v, nil
}

// imageUser returns a container that uses img by its ID, a tag or a
// digest, in any state: the same rule as ImagesInUse, with one map lookup
// per reference.
func (v *nodeView) imageUser(img Image) (Container, bool) {
	if c, ok := v.users[img.ID]; ok && img.ID != "" {
		return c, true
	}
	for _, refs := range [2][]string{img.RepoTags, img.RepoDigests} {
		for _, ref := range refs {
			if c, ok := v.users[ref]; ok && ref != "" {
				return c, true
			}
		}
	}
	return Container{}, false
}
