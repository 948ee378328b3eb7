package main

import (
	"net"
	"net/http"
	"sync"
)

// idleFirst is a listener whose HTTP server holds at most max
// connections. At the bound, a new connection closes the one that has
// been idle longest (a keep-alive between requests) instead of waiting
// in the kernel's backlog: a client that holds many idle connections
// cannot keep out the kubelet's probes or a scrape (a plain
// LimitListener let 128 held connections get the agent restarted by its
// failed liveness probe). With none idle (every one in a request, each
// bounded by ReadHeaderTimeout), Accept waits for one to end. The
// server's ConnState must be track.
type idleFirst struct {
	net.Listener
	max int

	mu   sync.Mutex
	cond *sync.Cond
	open map[net.Conn]bool // every connection handed out; true while idle
	idle []net.Conn        // the idle ones, longest idle first
}

// newIdleFirst wraps l to hold at most max connections.
func newIdleFirst(l net.Listener, max int) *idleFirst {
	f := &idleFirst{Listener: l, max: max, open: make(map[net.Conn]bool)}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// Accept returns the next connection, making room for it first.
func (f *idleFirst) Accept() (net.Conn, error) {
	c, err := f.Listener.Accept()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.open) >= f.max {
		if len(f.idle) > 0 {
			oldest := f.idle[0]
			f.setIdle(oldest, false)
			delete(f.open, oldest)
			oldest.Close() // the server sees it closed, and forgets it
			continue
		}
		f.cond.Wait()
	}
	f.open[c] = false
	return c, nil
}

// track is the server's ConnState: it follows which connections are idle
// and which have ended.
func (f *idleFirst) track(c net.Conn, s http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.open[c]; !ok {
		return // closed here at the bound, or not ours
	}
	switch s {
	case http.StateIdle:
		f.setIdle(c, true)
	case http.StateActive:
		f.setIdle(c, false)
	case http.StateClosed, http.StateHijacked:
		f.setIdle(c, false)
		delete(f.open, c)
		f.cond.Broadcast()
	}
}

// setIdle marks c idle (at the end of the idle list) or not; f.mu is held.
func (f *idleFirst) setIdle(c net.Conn, idle bool) {
	if f.open[c] == idle {
		return
	}
	f.open[c] = idle
	if idle {
		f.idle = append(f.idle, c)
		return
	}
	for i, d := range f.idle {
		if d == c {
			f.idle = append(f.idle[:i], f.idle[i+1:]...)
			return
		}
	}
}
