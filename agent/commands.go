package agent

import (
	"context"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/engine"
)

// Command results in NodeGCStatus.Command.
const (
	CommandRunning = "running"
	CommandDone    = "done"
	CommandRefused = "refused"
	CommandError   = "error"
)

// passRunner is what the commands need of the scheduler.
type passRunner interface {
	Force(ctx context.Context, kind engine.PassKind) (engine.PassReport, error)
	Preview(ctx context.Context, kind engine.PassKind) (engine.PassReport, error)
	Pause()
	Resume()
}

// commander carries out the commands of this node's NodeGC spec: each
// new pass ID runs once, and a pause from the object holds until its
// Until or until it is removed. Outcomes go into the object's status
// through the writer.
type commander struct {
	sched passRunner
	w     *objectWriter
	log   *slog.Logger
	now   func() time.Time
	// afterFunc is time.AfterFunc (a test's clock in tests).
	afterFunc func(time.Duration, func()) *time.Timer
	// ctx ends the passes commands start.
	ctx context.Context

	mu sync.Mutex
	// seen is set once the first object was handled: the IDs it already
	// acknowledges are not run again after a restart.
	seen     bool
	lastPass string
	pause    *v1alpha1.PauseCommand
	timer    *time.Timer
	passes   sync.Mutex     // one commanded pass at a time
	running  sync.WaitGroup // the commanded passes
}

// watchCommands carries out the commands of the node's NodeGC object
// until ctx ends, then waits for the pass it started, if any.
func watchCommands(ctx context.Context, ps *Pods, s passRunner, w *objectWriter, log *slog.Logger) {
	c := &commander{sched: s, w: w, log: log, now: time.Now, afterFunc: time.AfterFunc, ctx: ctx}
	defer c.stop()
	watchObject(ctx, ps.Client.NodeGCs().Resource(), ps.Node, log, func(o *v1alpha1.NodeGC) {
		if o == nil {
			w.objectGone()
		}
		c.handle(o)
	})
}

// handle acts on the object as the informer last saw it; nil is a
// deleted object (its pause ends).
func (c *commander) handle(obj *v1alpha1.NodeGC) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var spec v1alpha1.NodeGCSpec
	if obj != nil {
		spec = obj.Spec
		if !c.seen {
			c.seen = true
			if obj.Status.Command != nil {
				c.lastPass = obj.Status.Command.ID
			}
		}
	}
	if p := spec.Pass; p != nil && p.ID != c.lastPass {
		c.lastPass = p.ID
		c.startPass(*p)
	}
	c.applyPause(spec.Pause)
}

// startPass runs p in the background, its outcome in the status.
func (c *commander) startPass(p v1alpha1.PassCommand) {
	kind := engine.PassKind(p.Kind)
	switch kind {
	case engine.PassImages, engine.PassContainers, engine.PassFull, engine.PassReclaimAll:
	default:
		c.w.setCommand(&v1alpha1.CommandOutcome{ID: p.ID, Result: CommandRefused, Message: "unknown pass kind " + clip(p.Kind, 32), At: metav1.NewTime(c.now())})
		return
	}
	c.log.Info("pass asked through the NodeGC object", "id", p.ID, "kind", kind, "preview", p.Preview, "by", p.By)
	c.w.setCommand(&v1alpha1.CommandOutcome{ID: p.ID, Result: CommandRunning, At: metav1.NewTime(c.now())})
	c.running.Go(func() {
		c.passes.Lock()
		defer c.passes.Unlock()
		run := c.sched.Force
		if p.Preview {
			run = c.sched.Preview
		}
		r, err := run(c.ctx, kind)
		out := &v1alpha1.CommandOutcome{ID: p.ID, Result: CommandDone, At: metav1.NewTime(c.now()), Pass: reportPass(r)}
		if err != nil {
			out.Result, out.Message = CommandError, clip(err.Error(), 128)
		}
		c.w.setCommand(out)
	})
}

// applyPause pauses the periodic passes while p lasts, and resumes them
// when the pause it applied is removed, replaced by an expired one, or
// expires.
func (c *commander) applyPause(p *v1alpha1.PauseCommand) {
	active := p != nil && p.Until.After(c.now())
	switch {
	case active && (c.pause == nil || c.pause.ID != p.ID || !c.pause.Until.Equal(&p.Until)):
		pc := *p
		c.pause = &pc
		c.sched.Pause()
		c.w.setPauseCommand(&pc)
		c.log.Info("periodic passes paused through the NodeGC object", "id", p.ID, "by", p.By, "until", p.Until.Time)
		if c.timer != nil {
			c.timer.Stop()
		}
		id := p.ID
		c.timer = c.afterFunc(p.Until.Sub(c.now()), func() { c.expire(id) })
	case !active && c.pause != nil:
		c.resume()
	}
}

// expire ends the pause id when it is still the one applied.
func (c *commander) expire(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pause != nil && c.pause.ID == id {
		c.resume()
	}
}

// resume ends the applied pause; c.mu is held.
func (c *commander) resume() {
	c.log.Info("periodic passes resumed: the NodeGC object's pause ended", "id", c.pause.ID)
	c.pause = nil
	if c.timer != nil {
		c.timer.Stop()
	}
	c.sched.Resume()
	c.w.setPauseCommand(nil)
}

// stop stops the pause's timer and waits for the commanded passes.
func (c *commander) stop() {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	c.running.Wait()
}

// clip cuts s to at most n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// watchObject runs an informer on the node's NodeGC object (a field
// selector on its name: one object, not the fleet's) and calls handle on
// each version of it until ctx ends. The informer lists again and
// resumes when its watch breaks.
func watchObject(ctx context.Context, r dynamic.ResourceInterface, node string, log *slog.Logger, handle func(*v1alpha1.NodeGC)) {
	sel := fields.OneTermEqualSelector("metadata.name", node).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return r.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return r.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	on := func(o any) {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return
		}
		obj, err := v1alpha1.FromUnstructured(u)
		if err != nil {
			log.Warn("NodeGC object unreadable: its commands are ignored", "err", err)
			return
		}
		handle(obj)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    on,
		UpdateFunc: func(_, o any) { on(o) },
		DeleteFunc: func(any) { handle(nil) },
	}); err != nil {
		log.Warn("NodeGC object not watched", "err", err)
		return
	}
	inf.RunWithContext(ctx)
}
