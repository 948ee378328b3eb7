package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/kubeclient"
	"github.com/nodegc/nodegc/metrics"
)

// The NodeGC object's cadence: the kubelet's NodeStatus (KEP-589) is
// written on a change, or every 5 minutes when nothing changed.
const (
	// ObjectInterval is the least time between two writes of the
	// object, and how often the agent compares its status with the
	// last written.
	ObjectInterval = 5 * time.Second
	// ObjectHeartbeat is the longest time between two writes: a status
	// older than a few of these is stale.
	ObjectHeartbeat = 5 * time.Minute
	// objectTimeout bounds one write, its retries on a conflict
	// included.
	objectTimeout = 30 * time.Second
)

// objectStore is the API server as the object's writer uses it.
type objectStore interface {
	Node(ctx context.Context, name string) (*corev1.Node, error)
	Get(ctx context.Context, name string) (*v1alpha1.NodeGC, error)
	Create(ctx context.Context, obj *v1alpha1.NodeGC) (*v1alpha1.NodeGC, error)
	UpdateStatus(ctx context.Context, obj *v1alpha1.NodeGC) (*v1alpha1.NodeGC, error)
}

// kubeStore is objectStore on the pod source's API client.
type kubeStore struct{ c *kubeclient.Client }

func (k kubeStore) Node(ctx context.Context, name string) (*corev1.Node, error) {
	return k.c.Node(ctx, name)
}

func (k kubeStore) Get(ctx context.Context, name string) (*v1alpha1.NodeGC, error) {
	return k.c.NodeGCs().Get(ctx, name)
}

func (k kubeStore) Create(ctx context.Context, obj *v1alpha1.NodeGC) (*v1alpha1.NodeGC, error) {
	return k.c.NodeGCs().Create(ctx, obj)
}

func (k kubeStore) UpdateStatus(ctx context.Context, obj *v1alpha1.NodeGC) (*v1alpha1.NodeGC, error) {
	return k.c.NodeGCs().UpdateStatus(ctx, obj)
}

// objectBackoff spaces the attempts after a failed write: from 1 s,
// doubling, to at most one a heartbeat period.
var objectBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 12, Cap: ObjectHeartbeat}

// objectWriter writes this node's NodeGC object: created owned by its
// Node, its status written when something it shows changes, at most once
// an ObjectInterval, and at least once an ObjectHeartbeat. A write that
// fails is logged and retried later; it never stops a pass.
type objectWriter struct {
	store   objectStore
	node    string
	log     *slog.Logger
	summary func() metrics.Summary
	// sched is the scheduler's status: who paused, since and until when.
	sched func() engine.Status
	// forecast is the latest eviction forecast (nil: none yet); nil
	// without a forecaster.
	forecast func() *forecast.Forecast
	started  time.Time

	mu         sync.Mutex
	image, ctr *v1alpha1.Pass // the latest passes, from observe
	// shownImage and shownCtr are the passes last written.
	shownImage, shownCtr *v1alpha1.Pass
	// command is the latest command's outcome; pauseCmd the object's
	// pause the agent applied.
	command  *v1alpha1.CommandOutcome
	pauseCmd *v1alpha1.PauseCommand
	// gone is set when the object was deleted.
	gone bool

	// The fields below belong to the goroutine that calls step.
	obj       *v1alpha1.NodeGC // the object as last read or written
	written   *v1alpha1.NodeGCStatus
	writtenAt time.Time
	backoff   wait.Backoff
	notBefore time.Time
}

// newObjectWriter returns the writer of node's object; nil without an
// API client or a node name.
func newObjectWriter(ps *Pods, log *slog.Logger, col *metrics.Collector, s *engine.Scheduler, started time.Time) *objectWriter {
	if ps == nil || ps.Client == nil || ps.Node == "" {
		return nil
	}
	return &objectWriter{store: kubeStore{ps.Client}, node: ps.Node, log: log, started: started,
		summary: func() metrics.Summary { return col.Summary(ps.Node, started) }, sched: s.Status, backoff: objectBackoff}
}

// run writes the object until ctx ends.
func (w *objectWriter) run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(w.step(ctx, time.Now()))
	}
}

// observe records a real pass's outcome for the status: the image GC
// attempt it made, and its container side. nil ignores it.
func (w *objectWriter) observe(r engine.PassReport) {
	if w == nil || r.DryRun {
		return
	}
	_, result := metrics.PassLabels(r)
	w.mu.Lock()
	defer w.mu.Unlock()
	if res, reason, ok := metrics.ImageAttempt(r); ok {
		p := passOf(r, func(k engine.ItemKind) bool { return k == engine.ItemImage }, res, reason)
		p.TargetBytes, p.FreedBytes, p.MeasuredBytes = r.Plan.ImageGC.BytesToFree, r.EstimatedBytesFreed, r.MeasuredBytesFreed
		w.image = later(w.image, w.shownImage, p)
	}
	if r.Kind != engine.PassImages && r.Skipped == "" {
		w.ctr = later(w.ctr, w.shownCtr, passOf(r, func(k engine.ItemKind) bool { return k != engine.ItemImage }, result, ""))
	}
}

// reportPass is a whole pass (a commanded one, or its preview) as the
// status shows it.
func reportPass(r engine.PassReport) *v1alpha1.Pass {
	_, result := metrics.PassLabels(r)
	p := passOf(r, func(engine.ItemKind) bool { return true }, result, "")
	if _, reason, ok := metrics.ImageAttempt(r); ok {
		p.Reason = reason
		p.TargetBytes, p.FreedBytes, p.MeasuredBytes = r.Plan.ImageGC.BytesToFree, r.EstimatedBytesFreed, r.MeasuredBytesFreed
	}
	if r.DryRun { // nothing removed: what the plan would remove
		p.Result = "preview"
		p.Removed = int32(r.Count(engine.OutcomePlanned))
	}
	return p
}

// passOf is r's outcome counted over the items whose kind is in.
func passOf(r engine.PassReport, in func(engine.ItemKind) bool, result, reason string) *v1alpha1.Pass {
	trigger, _ := metrics.PassLabels(r)
	p := &v1alpha1.Pass{At: metav1.NewTime(r.FinishedAt), Kind: string(r.Kind), Trigger: trigger, Result: result, Reason: reason}
	for _, it := range r.Items {
		if !in(it.Kind) {
			continue
		}
		switch it.Outcome {
		case engine.OutcomeRemoved:
			p.Removed++
		case engine.OutcomeFailed:
			p.Failed++
		}
	}
	return p
}

// setCommand records a command's outcome for the next write.
func (w *objectWriter) setCommand(c *v1alpha1.CommandOutcome) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.command = c
}

// setPauseCommand records the object's pause the agent applied; nil when
// none.
func (w *objectWriter) setPauseCommand(p *v1alpha1.PauseCommand) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pauseCmd = p
}

// objectGone makes the next step write the object again: it was deleted.
func (w *objectWriter) objectGone() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gone = true
}

// later returns the pass to show of cur (shown is the one last written)
// and next, a newer one: next, unless it is quiet and cur did something
// that was never written (passes come every few seconds on a busy node,
// writes at most every ObjectInterval: the one that removed is shown).
func later(cur, shown, next *v1alpha1.Pass) *v1alpha1.Pass {
	if cur != nil && cur != shown && !quiet(cur) && quiet(next) {
		return cur
	}
	return next
}

// quiet reports whether p removed nothing, failed nothing and ended
// without an error.
func quiet(p *v1alpha1.Pass) bool {
	return p.Removed == 0 && p.Failed == 0 && (p.Result == "ok" || p.Result == metrics.ResultNoop)
}

// step writes the status when it is due and returns when to look again.
func (w *objectWriter) step(ctx context.Context, now time.Time) time.Duration {
	if now.Before(w.notBefore) {
		return w.notBefore.Sub(now)
	}
	w.mu.Lock()
	if w.gone {
		w.gone, w.obj, w.written = false, nil, nil
	}
	w.mu.Unlock()
	st := w.status(now)
	if w.written != nil && !shownChanged(*w.written, st) && now.Sub(w.writtenAt) < ObjectHeartbeat {
		return ObjectInterval
	}
	st.HeartbeatTime = &metav1.Time{Time: now}
	if err := w.write(ctx, st); err != nil {
		d := w.backoff.Step()
		w.log.Warn("NodeGC object not written", "node", w.node, "err", err, "retryIn", d.Round(time.Second).String())
		w.notBefore = now.Add(d)
		return d
	}
	w.backoff = objectBackoff
	w.written, w.writtenAt, w.notBefore = &st, now, now.Add(ObjectInterval)
	w.mu.Lock()
	w.shownImage, w.shownCtr = st.LastImagePass, st.LastContainerPass
	w.mu.Unlock()
	return ObjectInterval
}

// status is the node's row as the collector and the latest passes have
// it.
func (w *objectWriter) status(now time.Time) v1alpha1.NodeGCStatus {
	s := w.summary()
	st := v1alpha1.NodeGCStatus{
		Version: s.Version, StartedAt: &metav1.Time{Time: w.started},
		Band:      v1alpha1.Band{High: int32(s.High), Low: int32(s.Low)},
		PodSource: s.PodSource, EventStream: s.EventStream,
	}
	if s.ImageFs != nil && s.UsagePercent >= 0 {
		st.ImageFs = &v1alpha1.ImageFs{CapacityBytes: s.ImageFs.CapacityBytes, AvailableBytes: s.ImageFs.AvailableBytes, UsagePercent: int32(s.UsagePercent)}
	}
	if s.DeadContainers >= 0 {
		dead := int32(s.DeadContainers)
		st.DeadContainers = &dead
	}
	for k, v := range s.Kept {
		if st.Kept == nil {
			st.Kept = map[string]int32{}
		}
		st.Kept[string(k)] = int32(v)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if sch := w.sched(); sch.Paused {
		st.Paused = &v1alpha1.Pause{Since: metav1.NewTime(sch.PausedSince), By: clip(sch.PausedBy, 128)}
		if !sch.PausedUntil.IsZero() {
			st.Paused.Until = &metav1.Time{Time: sch.PausedUntil}
		}
		if p := w.pauseCmd; p != nil && sch.PausedBy == pauseActor(p) {
			st.Paused.ID, st.Paused.By = p.ID, p.By
		}
	}
	st.LastImagePass, st.LastContainerPass, st.Command = w.image, w.ctr, w.command
	if w.forecast != nil {
		var shown *v1alpha1.Forecast
		if w.written != nil {
			shown = w.written.Forecast
		}
		st.Forecast = objectForecast(w.forecast(), shown)
	}
	return st
}

// shownChanged reports whether cur shows something old does not. The
// heartbeat is not a change; nor are the image fs's bytes while its usage
// percent stays; nor is a newer pass that removed nothing and ended as
// the one before it (a periodic pass on a quiet node): its time rides
// along with the next write.
func shownChanged(old, cur v1alpha1.NodeGCStatus) bool {
	cur.HeartbeatTime = old.HeartbeatTime
	if o, c := old.ImageFs, cur.ImageFs; o != nil && c != nil && o.UsagePercent == c.UsagePercent && o.CapacityBytes == c.CapacityBytes {
		cur.ImageFs = o
	}
	cur.LastImagePass = quietAsBefore(old.LastImagePass, cur.LastImagePass)
	cur.LastContainerPass = quietAsBefore(old.LastContainerPass, cur.LastContainerPass)
	return !equality.Semantic.DeepEqual(old, cur)
}

// quietAsBefore returns old when cur removed nothing, failed nothing and
// ended as old did; else cur.
func quietAsBefore(old, cur *v1alpha1.Pass) *v1alpha1.Pass {
	if old == nil || cur == nil || cur.Removed != 0 || cur.Failed != 0 ||
		cur.Kind != old.Kind || cur.Trigger != old.Trigger || cur.Result != old.Result || cur.Reason != old.Reason {
		return cur
	}
	return old
}

// write writes st into the object, creating the object first if needed,
// retrying at once when the object changed or vanished under it.
func (w *objectWriter) write(ctx context.Context, st v1alpha1.NodeGCStatus) error {
	ctx, cancel := context.WithTimeout(ctx, objectTimeout)
	defer cancel()
	stale := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsNotFound(err) }
	return retry.OnError(retry.DefaultRetry, stale, func() error {
		if w.obj == nil {
			obj, err := w.ensure(ctx)
			if err != nil {
				return err
			}
			w.obj = obj
		}
		o := *w.obj
		o.Status = st
		out, err := w.store.UpdateStatus(ctx, &o)
		if err != nil {
			w.obj = nil // read again
			return fmt.Errorf("update the status of NodeGC %s: %w", w.node, err)
		}
		w.obj = out
		return nil
	})
}

// ensure returns the node's object, creating it, owned by the Node, when
// there is none.
func (w *objectWriter) ensure(ctx context.Context) (*v1alpha1.NodeGC, error) {
	obj, err := w.store.Get(ctx, w.node)
	if !apierrors.IsNotFound(err) {
		if err != nil {
			return nil, fmt.Errorf("get NodeGC %s: %w", w.node, err)
		}
		return obj, nil
	}
	node, err := w.store.Node(ctx, w.node)
	if err != nil {
		return nil, fmt.Errorf("get Node %s, the owner of its NodeGC: %w", w.node, err)
	}
	obj, err = w.store.Create(ctx, &v1alpha1.NodeGC{ObjectMeta: metav1.ObjectMeta{Name: w.node,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}}})
	var status apierrors.APIStatus
	switch {
	case apierrors.IsAlreadyExists(err):
		return w.store.Get(ctx, w.node)
	case apierrors.IsNotFound(err) && errors.As(err, &status) && status.Status().Details == nil:
		// Not the object (it is being created): its resource.
		// Not wrapped: a missing resource is not worth an immediate retry.
		return nil, fmt.Errorf("create NodeGC %s: the API server has no NodeGC resource (kubectl apply -k deploy/ installs it): %v", w.node, err)
	case err != nil:
		return nil, fmt.Errorf("create NodeGC %s: %w", w.node, err)
	}
	return obj, nil
}
