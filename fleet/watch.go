package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The resources the Watcher lists and watches.
var (
	// NodesResource is the cluster's Nodes, read as the API server's
	// table rows (nodes.go): their names and Ready condition, not their
	// status in full (a Node lists up to 50 images and is tens of KB; its
	// row is its metadata, about 1 KB, and a few words).
	NodesResource = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	// ObjectsResource is the agents' NodeGC objects (deploy/crd.yaml).
	ObjectsResource = schema.GroupVersionResource{Group: "nodegc.io", Version: "v1alpha1", Resource: "nodegcs"}
)

// InstallHint is what to run when the NodeGC resource is missing.
const InstallHint = "kubectl apply -k deploy/"

// listTimeout bounds one list: past it the reflector retries.
const listTimeout = time.Minute

// NotInstalledError is the NodeGC resource missing from the API server:
// its CRD is not applied.
type NotInstalledError struct{ Err error }

func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("the API server has no %s (the NodeGC resource is not installed: run %s)", resourceName(ObjectsResource), InstallHint)
}
func (e *NotInstalledError) Unwrap() error { return e.Err }

// resourceName is "nodes" or "nodegcs.nodegc.io", as RBAC names them.
func resourceName(r schema.GroupVersionResource) string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// Health is the state of one of the Watcher's streams (nodes, objects).
type Health struct {
	// Resource is "nodes" or "nodegcs.nodegc.io".
	Resource string
	// Err is the last list or watch error, nil once a list or watch
	// succeeded after it.
	Err error
	// BrokeAt is when the stream last broke; ResumedAt when it last came
	// back after a break (zero when it never broke, or is broken still).
	BrokeAt, ResumedAt time.Time
}

// stream is one resource's informer and what the Watcher knows of it.
type stream struct {
	res      schema.GroupVersionResource
	informer cache.SharedIndexInformer
	// watching is closed once the first watch is open (the rights to
	// list and watch are checked), or the first list or watch failed.
	watching chan struct{}
	once     sync.Once

	mu sync.Mutex
	h  Health
}

// record notes a list or watch outcome: an error breaks the stream, a
// success after an error resumes it.
// It reports whether the stream broke or resumed.
func (s *stream) record(err error, now time.Time) bool {
	if err != nil && errors.Is(err, context.Canceled) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		broke := s.h.Err == nil
		if broke {
			s.h.BrokeAt, s.h.ResumedAt = now, time.Time{}
		}
		s.h.Err = err
		return broke
	case s.h.Err != nil:
		s.h.Err, s.h.ResumedAt = nil, now
		return true
	}
	return false
}

func (s *stream) health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h
}

// Watcher keeps the fleet in memory: every Node (metadata only) and
// every NodeGC object, each by one list and then one watch, resumed by
// client-go's reflector when it breaks. Rows joins them; Changed says
// when they moved. No request is made per node.
type Watcher struct {
	nodes, objects *stream
	changed        chan struct{}
	now            func() time.Time
	cancel         context.CancelFunc
	done           chan struct{}
}

// WatchOptions configure a Watcher.
type WatchOptions struct {
	// Config is the user's API client configuration.
	Config *rest.Config
	// Now is the clock of the health records; nil is time.Now.
	Now func() time.Time
}

// Watch starts listing and watching the Nodes and the NodeGC objects,
// and returns at once; Ready waits for the first lists, Stop ends it.
func Watch(ctx context.Context, o WatchOptions) (*Watcher, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	// No client-side rate limit: the requests are two lists (in pages of
	// 500) and two watches, and the reflectors back off by themselves; at
	// client-go's default 5 a second, the pages of 5,000 nodes would wait.
	cfg := rest.CopyConfig(o.Config)
	cfg.QPS, cfg.Burst = -1, 0
	o.Config = cfg
	nc, err := newNodesClient(o.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(o.Config)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	raw, err := rawClient(o.Config)
	if err != nil {
		return nil, err
	}
	w := &Watcher{changed: make(chan struct{}, 1), now: o.Now, done: make(chan struct{})}
	w.nodes, err = w.stream(NodesResource, nc.list, nc.watch, &nodeMeta{}, keep)
	if err != nil {
		return nil, err
	}
	// The objects are listed straight into their rows (objectList), and
	// watched through the dynamic client, one object an event.
	w.objects, err = w.stream(ObjectsResource, raw.listObjects, dyn.Resource(ObjectsResource).Watch, &unstructured.Unstructured{}, decodeObject)
	if err != nil {
		return nil, err
	}
	ctx, w.cancel = context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, s := range []*stream{w.nodes, w.objects} {
		wg.Go(func() { s.informer.RunWithContext(ctx) })
	}
	go func() { wg.Wait(); close(w.done) }()
	return w, nil
}

// listFn and watchFn list and watch one resource.
type (
	listFn  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)
)

// objectsClient lists the NodeGC objects as raw JSON.
type objectsClient struct{ rc *rest.RESTClient }

// rawClient is a REST client of the NodeGC resource's group and version.
func rawClient(cfg *rest.Config) (objectsClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Group: ObjectsResource.Group, Version: ObjectsResource.Version}
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return objectsClient{}, fmt.Errorf("API client for %s: %w", resourceName(ObjectsResource), err)
	}
	return objectsClient{rc}, nil
}

// listObjects lists the NodeGC objects opts selects, decoded into rows.
func (c objectsClient) listObjects(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	body, err := c.rc.Get().Resource(ObjectsResource.Resource).VersionedParams(&opts, metav1.ParameterCodec).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	l := &objectList{}
	if err := json.Unmarshal(body, l); err != nil {
		return nil, err
	}
	return l, nil
}

// stream builds the informer of one resource. Every list and watch
// outcome is recorded (Health); transform turns each object into what the
// store keeps.
func (w *Watcher) stream(res schema.GroupVersionResource, list listFn, watchf watchFn, example runtime.Object, transform cache.TransformFunc) (*stream, error) {
	s := &stream{res: res, watching: make(chan struct{}), h: Health{Resource: resourceName(res)}}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			ctx, cancel := context.WithTimeout(ctx, listTimeout)
			defer cancel()
			l, err := list(ctx, opts)
			w.record(s, "list", err)
			if err != nil {
				s.once.Do(func() { close(s.watching) })
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			wi, err := watchf(ctx, opts)
			w.record(s, "watch", err)
			s.once.Do(func() { close(s.watching) })
			return wi, err
		},
	}
	s.informer = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, plainList{}), example, 0, cache.Indexers{})
	// The reflector reports here, instead of logging them, the list and
	// watch errors the functions above have recorded already, with their
	// verb; any other is recorded here.
	if err := s.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if s.health().Err == nil {
			w.record(s, "list and watch", err)
		}
	}); err != nil {
		return nil, fmt.Errorf("%s informer: %w", res.Resource, err)
	}
	if err := s.informer.SetTransform(transform); err != nil {
		return nil, fmt.Errorf("%s informer: %w", res.Resource, err)
	}
	if _, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { w.moved() }, UpdateFunc: func(any, any) { w.moved() }, DeleteFunc: func(any) { w.moved() },
	}); err != nil {
		return nil, fmt.Errorf("%s informer: %w", res.Resource, err)
	}
	return s, nil
}

// record notes a list or watch outcome of s, and a change for Changed
// when the stream broke or resumed.
func (w *Watcher) record(s *stream, verb string, err error) {
	if s.record(w.wrap(s.res, verb, err), w.now()) {
		w.moved()
	}
}

// wrap names what failed: a missing right names its verb and resource, a
// missing resource the install command.
func (w *Watcher) wrap(res schema.GroupVersionResource, verb string, err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return &ForbiddenError{Verb: verb + " " + resourceName(res), Err: err}
	case res == ObjectsResource && apierrors.IsNotFound(err):
		return &NotInstalledError{Err: err}
	}
	return fmt.Errorf("%s %s: %w", verb, resourceName(res), err)
}

// plainList tells the reflector to list, not to use the streaming
// watch-list, whose retries never reach the error handler (as
// engine/podsource says).
type plainList struct{}

// IsWatchListSemanticsUnSupported reports true: the Watcher lists.
func (plainList) IsWatchListSemanticsUnSupported() bool { return true }

// moved notes a change for Changed, coalescing: one pending note stands
// for any number of changes.
func (w *Watcher) moved() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// Changed receives once after any number of changes to the Nodes or the
// objects, and after a stream broke or resumed.
func (w *Watcher) Changed() <-chan struct{} { return w.changed }

// Ready waits until both streams have listed and opened their watch, and
// returns nil; or returns the first list or watch error (a missing right,
// the resource not installed, the API server unreachable), or ctx's.
func (w *Watcher) Ready(ctx context.Context) error {
	for _, s := range []*stream{w.nodes, w.objects} {
		select {
		case <-s.watching:
		case <-ctx.Done():
			return ctx.Err()
		}
		if h := s.health(); h.Err != nil {
			return h.Err
		}
	}
	for _, s := range []*stream{w.nodes, w.objects} {
		select {
		case <-s.informer.HasSyncedChecker().Done():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Health is the state of the two streams, nodes first.
func (w *Watcher) Health() []Health { return []Health{w.nodes.health(), w.objects.health()} }

// Stop ends the streams and returns at once; Done is closed when they
// have ended.
func (w *Watcher) Stop() { w.cancel() }

// Done is closed once the streams have stopped after Stop.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Rows is one row a Node, sorted by name, each joined with its node's
// object: a Node without one has no agent; an object older than
// StaleAfter at now is stale. An object whose Node is gone is not listed
// (it goes with its owner).
func (w *Watcher) Rows(now time.Time) []Node {
	nodes := w.nodes.informer.GetStore().List()
	objs := w.objects.informer.GetStore()
	rows := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		node, ok := n.(*nodeMeta)
		if !ok {
			continue
		}
		row := Node{Name: node.Name, State: NoAgent}
		if o, ok, _ := objs.GetByKey(node.Name); ok {
			row = o.(*object).row
			row.State, row.Err = judge(row, now)
		}
		row.Ready = node.Ready
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return rows
}

// keep is the Nodes' informer's transform: a nodeMeta is slim already.
func keep(obj any) (any, error) { return obj, nil }
