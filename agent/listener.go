package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// DefaultPort is the agent's port, the DaemonSet's too. It is
// below 1024 (net.ipv4.ip_unprivileged_port_start's default), so that
// only root with CAP_NET_BIND_SERVICE can bind it, on any address of any
// family: while the agent restarts, no other user's program can take its
// place and answer the kubelet's probes or Prometheus. 1017 is in IANA's unassigned 1011-1020 (1021 and 1022
// are for experiments), rarely found open, and taken by no Kubernetes
// component (the kubelet's and the control plane's ports are 10248 to
// 10259) nor a CNI's (Calico's and kube-router's BGP is 179).
const DefaultPort = "1017"

// DefaultAddress is where the agent serves /metrics, /healthz and
// /readyz: both loopbacks (listenMetrics), on DefaultPort. It is --metrics-bind-address's default.
const DefaultAddress = "localhost:" + DefaultPort

// AddressError is an address the agent may not listen on: malformed, or
// a port below net.ipv4.ip_unprivileged_port_start without the right to
// bind it. It is bad input: its message names --metrics-bind-address.
type AddressError struct{ err error }

func (e *AddressError) Error() string { return e.err.Error() }
func (e *AddressError) Unwrap() error { return e.err }

// addressErrorf returns an *AddressError.
func addressErrorf(format string, a ...any) error {
	return &AddressError{fmt.Errorf(format, a...)}
}

// Listener is the agent's TCP listener on --metrics-bind-address, bound
// before the node is opened, so that an address it may not use is
// refused before anything is removed. Addresses another program holds
// are bound as soon as they are free, until Close.
type Listener struct {
	ml          *metricsListener
	stopBinding context.CancelFunc
	binding     sync.WaitGroup
}

// Listen binds addr (--metrics-bind-address; "0" binds nothing and
// returns nil) and, until Close, keeps trying the addresses another
// program holds, logging each try on log. A port any user may bind is
// warned about. An address it may not use is an *AddressError.
func Listen(ctx context.Context, addr string, log *slog.Logger) (*Listener, error) {
	ml, err := listenMetrics(addr)
	if ml == nil || err != nil {
		return nil, err
	}
	if w := metricsPortWarning(addr, unprivilegedPortStart()); w != "" {
		log.Warn(w)
	}
	bindCtx, stop := context.WithCancel(ctx)
	l := &Listener{ml: ml, stopBinding: stop}
	l.binding.Go(func() { ml.keepBinding(bindCtx, log) })
	return l, nil
}

// Close stops binding and closes every address bound; nil does nothing.
func (l *Listener) Close() error {
	if l == nil {
		return nil
	}
	l.stopBinding()
	l.binding.Wait()
	return l.ml.Close()
}

// metricsListener is the agent's TCP listener: every address it was told
// to bind, merged (both loopbacks for localhost), under the bounds of
// connGuard. Addresses another program held at start are in pending, and
// keepBinding binds them once they are free.
type metricsListener struct {
	*connGuard
	merged  *mergedListener
	pending []string
}

// listenMetrics binds the metrics listener; nil for "0".
// "localhost:PORT" is both loopbacks, 127.0.0.1 and [::1] (when the
// machine has IPv6), so that `curl localhost:PORT` reaches the agent
// whichever the name resolves to first, and neither loopback is left for
// another program to answer on. An address another program holds is
// pending (the agent logs it and keeps trying, see keepBinding); any
// other failure, a malformed address or a port it may not bind, is bad
// input naming the flag.
func listenMetrics(addr string) (*metricsListener, error) {
	if addr == "0" {
		return nil, nil
	}
	addrs, err := metricsAddresses(addr)
	if err != nil {
		return nil, err
	}
	m := newMergedListener(addr)
	ml := &metricsListener{connGuard: newConnGuard(m), merged: m}
	for i, a := range addrs {
		if i > 0 {
			// localhost:0: the second loopback on the port the first got.
			if host, port, _ := net.SplitHostPort(a); port == "0" && len(m.ls) > 0 {
				a = net.JoinHostPort(host, strconv.Itoa(m.ls[0].Addr().(*net.TCPAddr).Port))
			}
		}
		l, err := net.Listen("tcp", a)
		switch {
		case err == nil:
			m.add(l)
		case errors.Is(err, syscall.EADDRINUSE):
			ml.pending = append(ml.pending, a)
		case i > 0 && (errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT)):
			// No IPv6 loopback on this machine: nothing to bind, and
			// nothing anyone else can bind either.
		case errors.Is(err, syscall.EACCES):
			m.Close()
			return nil, addressErrorf("--metrics-bind-address: %s: only root with CAP_NET_BIND_SERVICE may bind a port below %d (net.ipv4.ip_unprivileged_port_start); run the agent as root with that capability, as the DaemonSet does", a, unprivilegedPortStart())
		default:
			m.Close()
			return nil, addressErrorf("--metrics-bind-address: %v", err)
		}
	}
	return ml, nil
}

// metricsAddresses are the addresses --metrics-bind-address names:
// localhost is both loopbacks, anything else itself.
func metricsAddresses(addr string) ([]string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, addressErrorf("--metrics-bind-address: want host:port (localhost:%s, :%s), or 0 for none: %v", DefaultPort, DefaultPort, err)
	}
	if host == "localhost" {
		return []string{net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)}, nil
	}
	return []string{addr}, nil
}

// metricsBindRetryCap is the longest wait between two tries to bind an
// address another program holds.
const metricsBindRetryCap = time.Minute

// keepBinding binds the pending addresses as soon as another program lets
// go of them, retrying with backoff until ctx ends. Each failure is an
// error line naming the address: while another program holds it, the
// kubelet's probes and Prometheus may reach that program, or fail, and
// the agent's passes go on meanwhile.
func (ml *metricsListener) keepBinding(ctx context.Context, log *slog.Logger) {
	pending := ml.pending
	b := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: metricsBindRetryCap}
	for len(pending) > 0 {
		retry := b.Step()
		for _, a := range pending {
			_, port, _ := net.SplitHostPort(a)
			log.Error("--metrics-bind-address: "+a+" is held by another program, which should not hold this agent's address; serving there once it is free",
				"address", a, "find", "ss -ltnp 'sport = :"+port+"'", "retryIn", retry.Round(time.Millisecond).String())
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		var still []string
		for _, a := range pending {
			l, err := net.Listen("tcp", a)
			if err != nil {
				still = append(still, a)
				continue
			}
			if !ml.merged.add(l) {
				return // the agent is stopping
			}
			log.Info("metrics listener bound", "address", a)
		}
		pending = still
	}
}

// listening is the addresses bound now.
func (ml *metricsListener) listening() []string {
	ml.merged.mu.Lock()
	defer ml.merged.mu.Unlock()
	out := make([]string, len(ml.merged.ls))
	for i, l := range ml.merged.ls {
		out[i] = l.Addr().String()
	}
	return out
}

// unprivilegedPortStart is net.ipv4.ip_unprivileged_port_start, the
// lowest port any user may bind: 1024 unless the sysctl says otherwise
// (kernels before 4.11 have no sysctl and 1024 fixed).
func unprivilegedPortStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
	if err != nil {
		return 1024
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 1024
	}
	return n
}

// metricsPortWarning is why addr's port can be taken by another user's
// program (it is at or above start, net.ipv4.ip_unprivileged_port_start),
// or "". Port 0, a port the kernel picks, is nobody's to take beforehand.
func metricsPortWarning(addr string, start int) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	port, err := net.LookupPort("tcp", p)
	if err != nil || port == 0 || port < start {
		return ""
	}
	return fmt.Sprintf("--metrics-bind-address: any user may bind port %d (net.ipv4.ip_unprivileged_port_start=%d): while the agent is not listening (restarting, say), another user's program can take it and answer the kubelet's probes and Prometheus; use a port below %d, as the default %s is",
		port, start, start, DefaultPort)
}

// mergedListener accepts from every listener added to it, one goroutine
// each. It has none at first when every address was held by another
// program: Accept then waits until keepBinding adds one.
type mergedListener struct {
	addr     string // as configured, for Addr before any is bound
	accepted chan acceptResult
	done     chan struct{}

	mu     sync.Mutex
	ls     []net.Listener
	closed bool
}

type acceptResult struct {
	c   net.Conn
	err error
}

func newMergedListener(addr string) *mergedListener {
	return &mergedListener{addr: addr, accepted: make(chan acceptResult), done: make(chan struct{})}
}

// add starts accepting from l; false (and l closed) once m is closed.
func (m *mergedListener) add(l net.Listener) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		l.Close()
		return false
	}
	m.ls = append(m.ls, l)
	go m.accept(l)
	return true
}

// accept hands l's connections, and its errors but the one of its close,
// to Accept, one at a time: a listener that keeps failing waits for the
// server to ask again, and the server backs off on errors it can outlast.
func (m *mergedListener) accept(l net.Listener) {
	for {
		c, err := l.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		select {
		case m.accepted <- acceptResult{c, err}:
		case <-m.done:
			if c != nil {
				c.Close()
			}
			return
		}
	}
}

func (m *mergedListener) Accept() (net.Conn, error) {
	select {
	case r := <-m.accepted:
		return r.c, r.err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

// Close closes every listener; Accept returns net.ErrClosed from then on.
func (m *mergedListener) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	close(m.done)
	var errs []error
	for _, l := range m.ls {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// Addr is the first address bound, or the configured one before any is.
func (m *mergedListener) Addr() net.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ls) > 0 {
		return m.ls[0].Addr()
	}
	return configuredAddr(m.addr)
}

// configuredAddr is an address not bound yet.
type configuredAddr string

func (configuredAddr) Network() string  { return "tcp" }
func (a configuredAddr) String() string { return string(a) }
