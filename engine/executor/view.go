package executor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// ViewWindow is how long a pass trusts its view of the node's active
// containers (created and running), and the shortest time it trusts its
// whole view (every container, and for images the image list). The
// executor re-checks each item against these views, not against a fresh
// list per item, which made a pass cost removals times containers. The
// contract (what each re-check reads, and when the engine follows the
// runtime's events) is docs/design.md, "The view window".
const ViewWindow = 100 * time.Millisecond

// nodeView is the executor's cached list of containers (and, for the image
// phase, images), refreshed in the background; see ViewWindow.
type nodeView struct {
	r     model.Reader
	kind  viewKind
	ctx   context.Context  // for the listings: the pass's uncancelled calls
	clock func() time.Time // the wall clock, never the engine's fake one
	gen   *atomic.Uint64   // bumped by every container event

	mu   sync.Mutex
	cond *sync.Cond
	// cur is the newest complete listing of the current epoch.
	cur *viewData
	// listing is set while a listing is in flight, and cancel ends it;
	// done counts the listings finished, and err is the last one's error.
	listing bool
	cancel  context.CancelFunc
	done    uint64
	err     error
	// epoch is bumped by invalidate: a listing begun before it is not
	// used.
	epoch uint64
	// took is how long the last listing took.
	took time.Duration
	// withImages is set once a re-check asked for images; from then on
	// every listing lists them too.
	withImages bool
}

// viewData is one listing of the node with the indexes the re-checks
// need, each built at its first use (an image phase needs none of the
// container indexes). It is never modified once published, but for its
// indexes, which are built once.
type viewData struct {
	at     time.Time // when its listing began
	gen    uint64    // the container event generation before it began
	images bool      // it holds the image list

	containers []model.Container
	imageList  []model.Image

	// The indexes point into containers and imageList, which never
	// change: a large node's pass builds them for every view, and copies
	// of each Container (about 200 bytes) in three maps were the largest
	// part of what a pass allocated.
	imageIdx     sync.Once
	users        map[string]*model.Container // every ImageID and ImageRef to the first container naming it
	imageByID    map[string]*model.Image
	containerIdx sync.Once
	bySandbox    map[string]*model.Container // a sandbox ID to the first container referencing it
	byID         map[string]*model.Container
	byPodUID     map[string][]*model.Container
}

// image returns the listed image with the ID.
func (d *viewData) image(id string) (model.Image, bool) {
	d.indexImages()
	if img, ok := d.imageByID[id]; ok {
		return *img, true
	}
	return model.Image{}, false
}

// indexImages builds the image phase's indexes.
func (d *viewData) indexImages() {
	d.imageIdx.Do(func() {
		d.users = make(map[string]*model.Container, len(d.containers))
		for i := range d.containers {
			c := &d.containers[i]
			for _, ref := range [2]string{c.ImageID, c.ImageRef} {
				if _, ok := d.users[ref]; ref != "" && !ok {
					d.users[ref] = c
				}
			}
		}
		d.imageByID = make(map[string]*model.Image, len(d.imageList))
		for i := range d.imageList {
			d.imageByID[d.imageList[i].ID] = &d.imageList[i]
		}
	})
}

// container returns the listed container with the ID.
func (d *viewData) container(id string) (model.Container, bool) {
	d.indexContainers()
	if c, ok := d.byID[id]; ok {
		return *c, true
	}
	return model.Container{}, false
}

// sandboxUser returns a container that references the sandbox.
func (d *viewData) sandboxUser(id string) (model.Container, bool) {
	d.indexContainers()
	if c, ok := d.bySandbox[id]; ok {
		return *c, true
	}
	return model.Container{}, false
}

// podContainers returns the listed containers of the pod; the caller
// must not change them.
func (d *viewData) podContainers(uid string) []*model.Container {
	d.indexContainers()
	return d.byPodUID[uid]
}

// indexContainers builds the container, sandbox and log phases' indexes.
func (d *viewData) indexContainers() {
	d.containerIdx.Do(func() {
		d.bySandbox = make(map[string]*model.Container, len(d.containers)/2)
		d.byID = make(map[string]*model.Container, len(d.containers))
		d.byPodUID = make(map[string][]*model.Container, len(d.containers)/2)
		for i := range d.containers {
			c := &d.containers[i]
			if _, ok := d.bySandbox[c.PodSandboxID]; !ok && c.PodSandboxID != "" {
				d.bySandbox[c.PodSandboxID] = c
			}
			d.byID[c.ID] = c
			if c.PodUID != "" {
				d.byPodUID[c.PodUID] = append(d.byPodUID[c.PodUID], c)
			}
		}
	})
}

// viewKind says which containers a view lists.
type viewKind int

const (
	// viewAll lists every container (and the images when asked).
	viewAll viewKind = iota
	// viewRunning lists the running containers alone: the container
	// phase's view, whose re-check asks only whether a planned container
	// runs.
	viewRunning
	// viewActive lists the created and running containers: the image
	// re-check's view of the containers that can newly use an image,
	// trusted for ViewWindow alone.
	viewActive
)

// ActiveLister is a Reader that can list the created and running
// containers alone (the CRI state filter). The image re-check uses it
// where a Reader has it, and filters the whole list otherwise.
type ActiveLister interface {
	ListActiveContainers(ctx context.Context) ([]model.Container, error)
}

// RunningLister is a Reader that can list the running containers alone
// (the CRI state filter), which is far cheaper than the whole list on a
// node with many dead containers. The executor uses it where a Reader has
// it, and filters the whole list otherwise.
type RunningLister interface {
	ListRunningContainers(ctx context.Context) ([]model.Container, error)
}

// passViews are a pass's views of the node (see ViewWindow): all, every
// container (and the images, for the image phase); running, the running
// containers alone, for the container phase; active, the created and
// running ones, for the image phase when the engine does not follow the
// runtime's events.
type passViews struct {
	all, running, active *nodeView
}

// newPassViews makes a pass's views, whose listings run in ctx, and
// starts listing what the first phase's re-checks of kind first read
// ("" for none): the listing runs while the pass sets up. following says
// whether the engine follows the runtime's events (the image phase then
// needs no active view).
func newPassViews(ctx context.Context, r model.Reader, gen *atomic.Uint64, first model.ItemKind, following bool) passViews {
	vs := passViews{all: newNodeView(ctx, r, gen, viewAll), running: newNodeView(ctx, r, gen, viewRunning), active: newNodeView(ctx, r, gen, viewActive)}
	switch first {
	case "":
	case model.ItemContainer:
		vs.running.prefetch(false)
	case model.ItemImage:
		vs.all.prefetch(true)
		if !following {
			vs.active.prefetch(false)
		}
	default:
		vs.all.prefetch(false)
	}
	return vs
}

// invalidate makes every view list again at its next use: the phase
// before removed what they hold.
func (vs passViews) invalidate() {
	for _, v := range [...]*nodeView{vs.all, vs.running, vs.active} {
		v.invalidate()
	}
}

// close cancels the views' listings in flight and waits for them: none
// outlives its pass.
func (vs passViews) close() {
	for _, v := range [...]*nodeView{vs.all, vs.running, vs.active} {
		v.close()
	}
}

// newNodeView returns an empty view that lists at its first use; ctx is
// the context of its listings (each bounded by CallTimeout); kind says
// which containers it holds.
func newNodeView(ctx context.Context, r model.Reader, gen *atomic.Uint64, kind viewKind) *nodeView {
	v := &nodeView{r: r, ctx: ctx, clock: time.Now, gen: gen, kind: kind}
	v.cond = sync.NewCond(&v.mu)
	return v
}

// invalidate makes the next use list again (a phase boundary: the executor
// has just removed what the view still holds); a listing in flight is not
// used, and is cancelled so the next one need not wait behind it.
func (v *nodeView) invalidate() {
	v.mu.Lock()
	v.cur = nil
	v.err = nil // the phase before's error is not this phase's
	v.epoch++
	if v.listing {
		v.cancel()
	}
	v.mu.Unlock()
}

// wait returns once no listing is in flight, so none outlives its pass.
func (v *nodeView) wait() {
	v.mu.Lock()
	for v.listing {
		v.cond.Wait()
	}
	v.mu.Unlock()
}

// close cancels a listing in flight and waits for it: the pass has no
// re-check left, and must not wait for a background listing it will not
// use.
func (v *nodeView) close() {
	v.invalidate()
	v.wait()
}

// prefetch starts the first listing ahead of the first re-check; images
// asks for the image list too.
func (v *nodeView) prefetch(images bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.withImages = v.withImages || images
	if v.cur == nil && !v.listing {
		v.startLocked()
	}
}

// window is how long a view is trusted: ViewWindow for the active
// containers; for the others ViewWindow, or twice the last listing's
// duration on a node where listing takes longer. v.mu is held.
func (v *nodeView) window() time.Duration {
	if v.kind == viewActive {
		return ViewWindow
	}
	return max(ViewWindow, 2*v.took)
}

// usable reports whether a check that began at began, at generation
// since, may use d: d's listing began after every container event
// reported before the check began, and at most the window before it (a
// listing that began after the check always serves, however long it
// took); v.mu is held. (An event that
// comes during the check does not make it wait again, or a steady stream
// of events would starve it.)
func (v *nodeView) usable(d *viewData, began time.Time, since uint64) bool {
	return d != nil && d.gen >= since && (d.images || !v.withImages) && began.Sub(d.at) <= v.window()
}

// fresh returns a view no older than the window, taken after the last
// container event, listing the node first when the newest one is not;
// images asks for the image list too. Callers share listings, and a view
// about to expire starts the next listing in the background. The returned
// view must not be modified.
func (v *nodeView) fresh(images bool) (*viewData, error) {
	since, began := v.gen.Load(), v.clock()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.withImages = v.withImages || images
	for {
		now := v.clock()
		if d := v.cur; v.usable(d, began, since) {
			if !v.listing && now.Sub(d.at)+v.took >= v.window() {
				v.startLocked()
			}
			return d, nil
		}
		if !v.listing {
			v.startLocked()
		}
		seen := v.done
		for v.done == seen {
			v.cond.Wait()
		}
		if v.err != nil && !v.usable(v.cur, began, since) {
			return nil, v.err
		}
	}
}

// startLocked begins a listing in the background; v.mu is held.
func (v *nodeView) startLocked() {
	v.listing = true
	epoch, withImages := v.epoch, v.withImages
	ctx, cancel := context.WithTimeout(v.ctx, CallTimeout)
	v.cancel = cancel
	go func() {
		defer cancel()
		g := v.gen.Load()
		at := v.clock()
		d, err := v.list(ctx, withImages)
		took := v.clock().Sub(at)
		v.mu.Lock()
		defer v.mu.Unlock()
		v.listing = false
		v.done++
		// A listing begun before invalidate speaks for the phase before:
		// neither its view nor its error is this phase's.
		if epoch == v.epoch {
			v.err = err
		}
		if err == nil {
			v.took = took
			if epoch == v.epoch {
				d.at, d.gen, d.images = at, g, withImages
				v.cur = d
			}
		}
		v.cond.Broadcast()
	}()
}

// list lists the node's containers, and its images when asked.
func (v *nodeView) list(ctx context.Context, images bool) (*viewData, error) {
	// The two lists are asked for at once: the view is as old as the
	// earlier of the two, and one round trip shorter.
	var imgs []model.Image
	var ierr error
	var wg sync.WaitGroup
	if images {
		wg.Go(func() { imgs, ierr = v.r.ListImages(ctx) })
	}
	cs, err := v.listContainers(ctx)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	if ierr != nil {
		return nil, fmt.Errorf("list images: %w", ierr)
	}
	return &viewData{containers: cs, imageList: imgs}, nil
}

// listContainers lists the containers the view holds.
func (v *nodeView) listContainers(ctx context.Context) ([]model.Container, error) {
	switch v.kind {
	case viewRunning:
		if rl, ok := v.r.(RunningLister); ok {
			return rl.ListRunningContainers(ctx)
		}
	case viewActive:
		if al, ok := v.r.(ActiveLister); ok {
			return al.ListActiveContainers(ctx)
		}
	}
	cs, err := v.r.ListContainers(ctx)
	switch v.kind {
	case viewRunning:
		cs = slices.DeleteFunc(cs, func(c model.Container) bool { return c.State != model.ContainerRunning })
	case viewActive:
		cs = slices.DeleteFunc(cs, func(c model.Container) bool {
			return c.State != model.ContainerRunning && c.State != model.ContainerCreated
		})
	}
	return cs, err
}

// imageUser returns a container that uses img by its ID, a tag or a
// digest, in any state: the same rule as ImagesInUse, with one map lookup
// per reference.
func (d *viewData) imageUser(img model.Image) (model.Container, bool) {
	d.indexImages()
	if c, ok := d.users[img.ID]; ok && img.ID != "" {
		return *c, true
	}
	for _, refs := range [2][]string{img.RepoTags, img.RepoDigests} {
		for _, ref := range refs {
			if c, ok := d.users[ref]; ok && ref != "" {
				return *c, true
			}
		}
	}
	return model.Container{}, false
}
