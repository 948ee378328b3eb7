package metrics

import (
	"context"

	"github.com/nodegc/nodegc/engine"
)

// WatchEvents returns src with its state recorded: the event stream
// counts as connected from a successful open until its channel closes.
// A nil src stays nil.
func (c *Collector) WatchEvents(src engine.EventSource) engine.EventSource {
	if src == nil {
		return nil
	}
	return &watchedEvents{src: src, c: c}
}

// watchedEvents is an event source whose opens and closes the collector
// sees.
type watchedEvents struct {
	src engine.EventSource
	c   *Collector
}

// ContainerEvents opens the stream and passes its events on.
func (w *watchedEvents) ContainerEvents(ctx context.Context) (<-chan engine.ContainerEvent, error) {
	ch, err := w.src.ContainerEvents(ctx)
	if err != nil {
		w.c.ObserveEventStream(false)
		return nil, err
	}
	w.c.ObserveEventStream(true)
	out := make(chan engine.ContainerEvent)
	go func() {
		defer close(out)
		// The follower reads until the channel closes, so this never
		// blocks for long.
		for ev := range ch {
			out <- ev
		}
		w.c.ObserveEventStream(false)
	}()
	return out, nil
}
