package agent

import (
	"context"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

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
	Pause(ctx context.Context, p engine.Pause) error
	Resume(ctx context.Context) error
	Status() engine.Status
}

// pauseActor is who the scheduler records as the author of p: the user
// the object names, and the object.
func pauseActor(p *v1alpha1.PauseCommand) string {
	return clip(p.By, 128) + " (NodeGC pause " + clip(p.ID, 64) + ")"
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
	// withActor is engine.WithActor: the scheduler records who paused.
	withActor func(context.Context, string) context.Context
	// ctx ends the passes commands start.
	ctx context.Context

	mu sync.Mutex
	// seen is set once the first object was handled: the IDs it already
	// acknowledges are not run again after a restart.
	seen     bool
	lastPass string
	pause    *v1alpha1.PauseCommand
	passes   sync.Mutex     // one commanded pass at a time
	running  sync.WaitGroup // the commanded passes
}

// watchCommands carries out the commands of the node's NodeGC object
// until ctx ends, then waits for the pass it started, if any.
func watchCommands(ctx context.Context, ps *Pods, s passRunner, w *objectWriter, log *slog.Logger) {
	c := &commander{sched: s, w: w, log: log, now: time.Now, withActor: engine.WithActor, ctx: ctx}
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

// applyPause pauses the periodic passes until p's Until (the scheduler
// ends the pause then), and resumes them when p, the pause applied, is
// removed or replaced by an expired one, if the pause in force is still
// p's.
func (c *commander) applyPause(p *v1alpha1.PauseCommand) {
	active := p != nil && p.Until.After(c.now())
	switch {
	case active && (c.pause == nil || c.pause.ID != p.ID || !c.pause.Until.Equal(&p.Until)):
		pc := *p
		c.pause = &pc
		c.w.setPauseCommand(&pc)
		ctx := c.withActor(c.ctx, pauseActor(&pc))
		if err := c.sched.Pause(ctx, engine.Pause{Until: p.Until.Time}); err != nil {
			c.log.Warn("NodeGC object's pause not applied", "id", p.ID, "err", err)
		}
	case !active && c.pause != nil:
		actor := pauseActor(c.pause)
		c.pause = nil
		c.w.setPauseCommand(nil)
		if st := c.sched.Status(); st.Paused && st.PausedBy == actor {
			if err := c.sched.Resume(c.withActor(c.ctx, actor)); err != nil {
				c.log.Warn("NodeGC object's pause not ended", "err", err)
			}
		}
	}
}

// stop waits for the commanded passes.
func (c *commander) stop() { c.running.Wait() }

// clip cuts s to at most n bytes, on a rune boundary: the status
// fields it fills are bounded by the CRD, and a rune cut in two would
// reach the reader as a replacement character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
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
