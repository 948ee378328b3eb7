package podsource

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/kubeclient"
)

// DefaultSyncTimeout is how long the first snapshots wait for the first
// list of pods. A pass never waits longer: an API server that does not
// answer in time leaves the pod source not ready (limits only) while the
// informer keeps trying in the background. One that refuses or fails is
// reported with its error as soon as the first list fails.
const DefaultSyncTimeout = 5 * time.Second

// listTimeout bounds each list of pods, so that an API server that takes
// the connection and never answers is retried, and reported, instead of
// holding the informer for good.
const listTimeout = 30 * time.Second

// Options configure a Source.
type Options struct {
	// Pods lists and watches the pods of every namespace: a
	// kubeclient.Client's Pods, or in tests a fake clientset's
	// CoreV1().Pods(""). Required.
	Pods kubeclient.Pods
	// NodeName is the node whose pods are watched, as the kubelet names
	// it (NodeName). Required.
	NodeName string
	// Server names the API server in the description, e.g.
	// "https://10.0.0.1:6443".
	Server string
	// SyncTimeout bounds the wait for the first list, counted from Start;
	// 0 means DefaultSyncTimeout.
	SyncTimeout time.Duration
}

// Source is the API server's view of the pods bound to one node: an
// informer on the pods with spec.nodeName = NodeName. Its PodSource method
// plugs into engine.Options.PodSource. It is safe for concurrent use.
type Source struct {
	o        Options
	informer cache.SharedIndexInformer
	synced   <-chan struct{}
	deadline time.Time
	cancel   context.CancelFunc
	done     chan struct{}

	// gen counts the changes of the informer's store (Generation).
	gen atomic.Uint64

	mu      sync.Mutex
	lastErr error // the last list or watch error, nil once one succeeds
	// inconsistent is why the last judged snapshot disagreed with the
	// list (an *InconsistentError), nil when it agreed.
	inconsistent error
	// failed is closed at the first list or watch error.
	failed     chan struct{}
	failedOnce sync.Once
}

// Start starts the informer and returns at once; Stop ends it. The
// informer lists the node's pods, then watches them, and retries with
// backoff when the API server cannot be reached.
//
// The informer lists with a plain list, never client-go's streaming
// watch-list: that path retries a refused connection inside the reflector
// (Reflector.watchList, isWatchErrorRetriable) with a backoff that ignores
// the stop signal, so the error never reached the error handler, a pass
// waited the whole sync timeout to say only "not synced yet", and Stop
// waited out the backoff. Every list and watch error is recorded as it
// happens, retried internally or not.
func Start(ctx context.Context, o Options) (*Source, error) {
	if o.Pods == nil {
		return nil, errors.New("pod source: no API client")
	}
	if o.NodeName == "" {
		return nil, errors.New("pod source: no node name")
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = DefaultSyncTimeout
	}
	selector := fields.OneTermEqualSelector("spec.nodeName", o.NodeName).String()
	pods := o.Pods
	s := &Source{o: o, done: make(chan struct{}), failed: make(chan struct{})}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			ctx, cancel := context.WithTimeout(ctx, listTimeout)
			defer cancel()
			opts.FieldSelector = selector
			l, err := pods.List(ctx, opts)
			s.setErr(err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			w, err := pods.Watch(ctx, opts)
			s.setErr(err)
			return w, err
		},
	}
	s.informer = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, plainList{}), &corev1.Pod{}, 0, cache.Indexers{})
	// The reflector reports list and watch errors here instead of logging
	// them, and retries with backoff.
	if err := s.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		s.setErr(err)
	}); err != nil {
		return nil, fmt.Errorf("pod source: %w", err)
	}
	if err := s.informer.SetTransform(slim); err != nil {
		return nil, fmt.Errorf("pod source: %w", err)
	}
	// Every pod added, updated or deleted moves the generation, so the
	// engine sees without asking whether what PodSource says may have
	// changed (Generation).
	moved := func() { s.gen.Add(1) }
	if _, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { moved() },
		UpdateFunc: func(any, any) { moved() },
		DeleteFunc: func(any) { moved() },
	}); err != nil {
		return nil, fmt.Errorf("pod source: %w", err)
	}
	s.synced = s.informer.HasSyncedChecker().Done()
	ctx, s.cancel = context.WithCancel(ctx)
	s.deadline = time.Now().Add(o.SyncTimeout)
	go func() {
		defer close(s.done)
		s.informer.RunWithContext(ctx)
	}()
	return s, nil
}

// plainList tells the reflector not to use the streaming watch-list
// (watchlist.DoesClientNotSupportWatchListSemantics): see Start.
type plainList struct{}

// IsWatchListSemanticsUnSupported reports true: the source lists.
func (plainList) IsWatchListSemanticsUnSupported() bool { return true }

// Stop stops the informer and returns at once: a request in flight ends
// with its context, in the background (Done is closed when it has). A
// quitting nodegc never waits for an API server.
func (s *Source) Stop() {
	s.cancel()
}

// Done is closed when the informer has stopped after Stop.
func (s *Source) Done() <-chan struct{} { return s.done }

// setErr records the outcome of a list or watch: its error, or nil when
// it succeeded. A stopped source records nothing more.
func (s *Source) setErr(err error) {
	if err != nil && errors.Is(err, context.Canceled) {
		return
	}
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
	if err != nil {
		s.failedOnce.Do(func() { close(s.failed) })
	}
}

// Err returns the last list or watch error, nil when the last list
// succeeded or none failed yet.
func (s *Source) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Synced reports whether the first list of pods has completed.
func (s *Source) Synced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// WaitForSync waits for the first list until the sync deadline (Start
// plus SyncTimeout) or ctx ends, and reports whether it completed. It
// stops waiting as soon as a list fails (the API server cannot be reached
// or refuses): the informer keeps retrying in the background, and a later
// pass will find it synced. Past the deadline it does not wait at all, so
// no pass ever blocks on an API server that does not answer.
func (s *Source) WaitForSync(ctx context.Context) bool {
	if s.Synced() {
		return true
	}
	if time.Until(s.deadline) <= 0 {
		return false
	}
	ctx, cancel := context.WithDeadline(ctx, s.deadline)
	defer cancel()
	select {
	case <-s.synced:
		return true
	case <-s.failed:
	case <-ctx.Done():
	}
	return s.Synced()
}

// Generation returns a number that changes whenever what PodSource says
// of the same snapshot may change: a pod added, updated or deleted in the
// informer's store, or the first list completing. It is
// engine.Options.PodSourceGen: a periodic container pass on a node that
// has not changed is skipped only while it stays the same. It asks the
// API server nothing.
func (s *Source) Generation() uint64 {
	g := s.gen.Load() << 1
	if s.Synced() {
		g |= 1
	}
	return g
}

// Inconsistent returns why the last snapshot judged disagreed with the
// API server's list (an *InconsistentError), nil when it agreed or none
// was judged yet.
func (s *Source) Inconsistent() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inconsistent
}

// Pods returns the pods the informer holds.
func (s *Source) Pods() []*corev1.Pod {
	objs := s.informer.GetStore().List()
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// PodSource judges the snapshot's pods (engine.Options.PodSource): once
// the first list has synced and the list agrees with the node it is ready
// and lists the removable pods (Removable). Before the first list it waits
// no longer than the sync deadline, or the first failed list; a list that
// disagrees with the node (InconsistentError) makes nothing removable.
// Either way it reports not ready and says why, so that the pass runs on
// the limits only, as a kubelet whose sources are not ready. It never
// fails.
func (s *Source) PodSource(ctx context.Context, snap engine.Snapshot) (engine.PodSource, error) {
	if !s.WaitForSync(ctx) {
		return engine.PodSource{RemovablePodUIDs: []string{}, Description: s.Describe()}, nil
	}
	pods := s.Pods()
	removable, err := Removable(snap, pods, s.o.NodeName)
	if ie, ok := err.(*InconsistentError); ok {
		ie.Server = s.o.Server
	}
	s.mu.Lock()
	s.inconsistent = err
	s.mu.Unlock()
	if err != nil {
		return engine.PodSource{RemovablePodUIDs: []string{}, Description: s.Describe()}, nil
	}
	return engine.PodSource{Ready: true, RemovablePodUIDs: removable, Description: s.describe(len(pods))}, nil
}

// Describe is the source's state in one line, e.g. "API server
// https://10.0.0.1:6443, node n1: synced, 42 pods", "…: not synced
// (… connect: connection refused): limits only" or "pod source
// inconsistent: node n1: 3 pods running here are not listed by the API
// server https://10.0.0.1:6443 (…): limits only".
func (s *Source) Describe() string {
	if s.Synced() {
		return s.describe(len(s.informer.GetStore().ListKeys()))
	}
	return s.describe(-1)
}

// describe says where the source asks and what it found: pods is how many
// it holds, or -1 before the first list.
func (s *Source) describe(pods int) string {
	where := "API server"
	if s.o.Server != "" {
		where += " " + s.o.Server
	}
	where += ", node " + s.o.NodeName
	lastErr, inconsistent := s.Err(), s.Inconsistent()
	switch {
	case pods < 0 && lastErr != nil:
		return fmt.Sprintf("%s: not synced (%v): limits only", where, lastErr)
	case pods < 0 && time.Until(s.deadline) <= 0:
		return fmt.Sprintf("%s: not synced (no answer within %v): limits only", where, s.o.SyncTimeout)
	case pods < 0:
		return where + ": not synced yet: limits only"
	case inconsistent != nil:
		return fmt.Sprintf("%v: limits only", inconsistent)
	case lastErr != nil:
		return fmt.Sprintf("%s: synced, %d pods (last watch error: %v)", where, pods, lastErr)
	}
	return fmt.Sprintf("%s: synced, %d pods", where, pods)
}

// slim keeps only what Removable reads of a pod, so that the informer's
// cache stays small on a node with many pods.
func slim(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone (cache.DeletedFinalStateUnknown)
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID,
			ResourceVersion:   p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec: corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{
			Phase:                      p.Status.Phase,
			Reason:                     p.Status.Reason,
			InitContainerStatuses:      slimStatuses(p.Status.InitContainerStatuses),
			ContainerStatuses:          slimStatuses(p.Status.ContainerStatuses),
			EphemeralContainerStatuses: slimStatuses(p.Status.EphemeralContainerStatuses),
		},
	}
	if uid, ok := p.Annotations[MirrorPodAnnotation]; ok {
		out.Annotations = map[string]string{MirrorPodAnnotation: uid}
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
			out.OwnerReferences = []metav1.OwnerReference{*ref}
		}
	}
	return out, nil
}

// slimStatuses keeps each container status's name and which state it is
// in.
func slimStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, c := range in {
		out[i].Name = c.Name
		if c.State.Running != nil {
			out[i].State.Running = &corev1.ContainerStateRunning{}
		}
		if c.State.Waiting != nil {
			out[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: c.State.Waiting.Reason}
		}
		if c.State.Terminated != nil {
			out[i].State.Terminated = &corev1.ContainerStateTerminated{ExitCode: c.State.Terminated.ExitCode, Reason: c.State.Terminated.Reason}
		}
	}
	return out
}
