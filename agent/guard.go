package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// The agent's TCP listener serves the kubelet's probes (/healthz,
// /readyz) and Prometheus (/metrics), and nothing else, to anyone who can
// reach its port. Whoever that is may open many connections and send as
// slowly as they like; the probes must be answered all the same, or the
// kubelet restarts the agent (and, on a port anyone may bind, someone
// else may take it meanwhile). So:
//
//   - a request's head must arrive within metricsHeaderTimeout, its head
//     and body within metricsReadTimeout (a large declared body gets
//     longer, at metricsBodyRate), and each piece of a response must be
//     taken within metricsWriteTimeout: a connection that stalls is
//     closed, whatever it sent;
//   - at most metricsRequests requests other than probes are in the
//     agent's handlers at once (one more is answered 503 and its
//     connection closed);
//   - the listener holds at most metricsConnections connections,
//     metricsProbeConnections more than metricsRequests, and never leaves
//     a new one in the kernel's backlog: at the bound it closes one that
//     holds none of the request slots, the one idle longest, else the
//     oldest not in a handler (still sending its request), else the
//     oldest in a probe. So a probe always gets a connection and a
//     handler, and whoever holds the others cannot keep it out.
const (
	metricsRequests         = 128
	metricsProbeConnections = 64
	metricsConnections      = metricsRequests + metricsProbeConnections

	metricsHeaderTimeout = 5 * time.Second
	metricsReadTimeout   = 15 * time.Second
	// metricsBodyRate is the slowest a large declared body may arrive:
	// Content-Length/metricsBodyRate is added to metricsReadTimeout.
	metricsBodyRate     = 64 << 10 // bytes a second
	metricsWriteTimeout = 15 * time.Second
	// metricsWriteChunk is the most a response write sends under one
	// deadline: a large response (a snapshot) may take long in all, but
	// each chunk must be taken within metricsWriteTimeout.
	metricsWriteChunk = 64 << 10
)

// metricsIdleTimeout closes a keep-alive connection of the metrics
// listener that has been idle this long, so that idle connections
// do not keep the slots of metricsConnections. A Prometheus scrape every
// minute keeps its connection.
const metricsIdleTimeout = 90 * time.Second

// isProbe reports whether r is for the kubelet's probes' paths, whatever
// its method.
func isProbe(r *http.Request) bool {
	return r.URL.Path == "/healthz" || r.URL.Path == "/readyz"
}

// connPhase is where a connection of connGuard is.
type connPhase uint8

const (
	// phaseWaiting: accepted, or between a request's head and its
	// handler, or after its handler (the server finishing the response).
	phaseWaiting connPhase = iota
	// phaseIdle: a keep-alive connection between requests, or reading
	// the next request's head.
	phaseIdle
	// phaseProbe: in the handler of /healthz or /readyz.
	phaseProbe
	// phaseBusy: in another handler, holding one of the request slots.
	phaseBusy
)

// evictionOrder is the order in which phases give up a connection at the
// bound; phaseBusy never does.
var evictionOrder = []connPhase{phaseIdle, phaseWaiting, phaseProbe}

// guardedConn is what connGuard knows of one connection.
type guardedConn struct {
	phase connPhase
	since uint64 // when it entered phase, in connGuard.tick order
}

// connGuard is a listener and the handler wrapper of its HTTP server that
// keep the bounds above. The server's ConnState must be track, its
// ConnContext connContext, and its Handler wrapped by handler.
type connGuard struct {
	net.Listener
	maxOpen, maxBusy int

	mu   sync.Mutex
	tick uint64
	open map[net.Conn]*guardedConn
	busy int // request slots taken
}

// newConnGuard wraps l with the agent's bounds.
func newConnGuard(l net.Listener) *connGuard {
	return &connGuard{Listener: l, maxOpen: metricsConnections, maxBusy: metricsRequests,
		open: make(map[net.Conn]*guardedConn)}
}

// Accept returns the next connection, closing one to make room for it at
// the bound; it never waits for room.
func (g *connGuard) Accept() (net.Conn, error) {
	c, err := g.Listener.Accept()
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.open) >= g.maxOpen {
		v := g.victim()
		if v == nil {
			break // only if maxOpen <= maxBusy: over the bound rather than wait
		}
		delete(g.open, v)
		v.Close() // the server sees it closed, and forgets it
	}
	g.tick++
	g.open[c] = &guardedConn{phase: phaseWaiting, since: g.tick}
	return c, nil
}

// victim is the connection to close at the bound, nil if every one holds
// a request slot; g.mu is held.
func (g *connGuard) victim() net.Conn {
	for _, p := range evictionOrder {
		var (
			oldest net.Conn
			since  uint64
		)
		for c, e := range g.open {
			if e.phase == p && (oldest == nil || e.since < since) {
				oldest, since = c, e.since
			}
		}
		if oldest != nil {
			return oldest
		}
	}
	return nil
}

// setPhase moves c to p, if the guard still holds it; g.mu is held.
func (g *connGuard) setPhase(c net.Conn, p connPhase) {
	if e, ok := g.open[c]; ok && e.phase != p {
		g.tick++
		e.phase, e.since = p, g.tick
	}
}

// track is the server's ConnState: it follows which connections are idle
// and which have ended.
func (g *connGuard) track(c net.Conn, s http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch s {
	case http.StateIdle:
		g.setPhase(c, phaseIdle)
	case http.StateActive:
		g.setPhase(c, phaseWaiting)
	case http.StateClosed, http.StateHijacked:
		delete(g.open, c)
	}
}

type guardConnKey struct{}

// connContext is the server's ConnContext: it lets handler find the
// request's connection.
func (g *connGuard) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, guardConnKey{}, c)
}

// enter moves the request's connection into a handler of kind p: a probe
// always may; any other request takes a request slot, and false means
// none is free.
func (g *connGuard) enter(c net.Conn, p connPhase) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p == phaseBusy {
		if g.busy >= g.maxBusy {
			return false
		}
		g.busy++
	}
	g.setPhase(c, p)
	return true
}

// leave moves the connection out of its handler, giving back its slot.
func (g *connGuard) leave(c net.Conn, p connPhase) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p == phaseBusy {
		g.busy--
	}
	g.setPhase(c, phaseWaiting)
}

// handler wraps h with the bounds on requests: the body's deadline, the
// response's write deadlines and the request slots.
func (g *connGuard) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(guardConnKey{}).(net.Conn)
		rc := http.NewResponseController(w)
		now := time.Now()
		if r.ContentLength > 0 {
			// The server's ReadTimeout holds a body of unknown length;
			// a declared one may take longer if it is large.
			extra := time.Duration(r.ContentLength) * time.Second / metricsBodyRate
			_ = rc.SetReadDeadline(now.Add(metricsReadTimeout + extra))
		}
		_ = rc.SetWriteDeadline(now.Add(metricsWriteTimeout)) // a 100-continue, say
		// What the server writes after the handler (the buffered rest of
		// the response) has its own deadline too.
		defer func() { _ = rc.SetWriteDeadline(time.Now().Add(metricsWriteTimeout)) }()
		gw := &guardedWriter{ResponseWriter: w, rc: rc}
		phase := phaseBusy
		if isProbe(r) {
			phase = phaseProbe
		}
		if !g.enter(c, phase) {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("the agent is serving %d requests, its most at once; try again", g.maxBusy), http.StatusServiceUnavailable)
			return
		}
		defer g.leave(c, phase)
		h.ServeHTTP(gw, r)
	})
}

// guardedWriter gives each write of a response a deadline, metricsWriteChunk
// bytes at a time.
type guardedWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (w *guardedWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), metricsWriteChunk)]
		_ = w.rc.SetWriteDeadline(time.Now().Add(metricsWriteTimeout))
		m, err := w.ResponseWriter.Write(chunk)
		n += m
		if err != nil {
			return n, err
		}
		p = p[m:]
	}
	return n, nil
}

// FlushError flushes what is buffered, under a fresh write deadline.
func (w *guardedWriter) FlushError() error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(metricsWriteTimeout))
	return w.rc.Flush()
}

// Flush is http.Flusher's.
func (w *guardedWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the server's writer.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// metricsServer is the HTTP server of the metrics listener l (from
// listenMetrics), with the bounds above when l is a *metricsListener. It
// sets no WriteTimeout: a large scrape may take long in all, so each
// write has its deadline instead (guardedWriter).
func metricsServer(l net.Listener, h http.Handler) *http.Server {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: metricsHeaderTimeout, ReadTimeout: metricsReadTimeout, IdleTimeout: metricsIdleTimeout}
	if ml, ok := l.(*metricsListener); ok {
		g := ml.connGuard
		srv.ConnState, srv.ConnContext, srv.Handler = g.track, g.connContext, g.handler(h)
	}
	return srv
}
