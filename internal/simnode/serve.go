package simnode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/containerdapi"
)

// ErrStopped is returned by Serve on a node that was stopped.
var ErrStopped = errors.New("simnode: stopped")

type netListener = net.Listener

// SocketPath returns the filesystem path of a unix endpoint:
// "unix:///run/x.sock" and "/run/x.sock" both name /run/x.sock.
func SocketPath(endpoint string) (string, error) {
	p := endpoint
	if scheme, rest, ok := strings.Cut(endpoint, "://"); ok {
		if scheme != "unix" {
			return "", fmt.Errorf("endpoint %q: only unix sockets are supported", endpoint)
		}
		p = rest
	}
	if p == "" {
		return "", fmt.Errorf("endpoint %q: empty socket path", endpoint)
	}
	return p, nil
}

// Listen opens the unix socket a Node serves on. endpoint is
// "unix:///path" or a bare path. A stale socket left by a dead process is
// removed; a socket something still answers on is an error, and so is a
// path that is not a socket. The socket is made 0600: only root may talk
// to it, as to a real runtime.
func Listen(endpoint string) (net.Listener, error) {
	p, err := SocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(p); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("listen on %s: exists and is not a socket", p)
		}
		if c, err := net.DialTimeout("unix", p, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %s: another process is serving on it", p)
		}
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", p, err)
	}
	l, err := net.Listen("unix", p)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", p, err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("listen on %s: %w", p, err)
	}
	return l, nil
}

// Serve serves the CRI RuntimeService and ImageService on l until Stop,
// and beside them containerd's containers List of the sandboxes (as
// containerd serves it on its CRI socket).
// Down and DropConnections do not end it: after Up it serves again on the
// same address. It returns nil after Stop.
func (n *Node) Serve(l net.Listener) error {
	c := &n.ctl
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		l.Close()
		return ErrStopped
	}
	if c.srv != nil {
		c.mu.Unlock()
		return errors.New("simnode: already serving")
	}
	c.srv = grpc.NewServer(
		grpc.ChainUnaryInterceptor(n.interceptUnary),
		grpc.ChainStreamInterceptor(n.interceptStream),
	)
	runtimeapi.RegisterRuntimeServiceServer(c.srv, &runtimeService{n: n})
	runtimeapi.RegisterImageServiceServer(c.srv, &imageService{n: n})
	containerdapi.Register(c.srv, containersService{n: n})
	c.addr = l.Addr().String()
	for {
		tl := &trackingListener{Listener: l, c: c}
		c.lis = tl
		srv := c.srv
		c.mu.Unlock()
		err := srv.Serve(tl)
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			return nil
		}
		if !c.down && c.next == nil {
			c.mu.Unlock()
			return fmt.Errorf("serve %s: %w", c.addr, err)
		}
		for c.down && !c.stopped {
			c.cond.Wait()
		}
		if c.stopped {
			c.mu.Unlock()
			return nil
		}
		l, c.next = c.next, nil // opened by Up
	}
}

// Stop ends Serve: it closes the listener (removing the socket) and every
// connection. A stopped node cannot serve again.
func (n *Node) Stop() {
	c := &n.ctl
	c.mu.Lock()
	c.stopped = true
	srv := c.srv
	c.cond.Broadcast()
	c.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
}

// Addr returns the address Serve listens on ("" before Serve).
func (n *Node) Addr() string {
	n.ctl.mu.Lock()
	defer n.ctl.mu.Unlock()
	return n.ctl.addr
}

// DropConnections closes every live client connection, as a runtime
// restart or a broken socket would. Calls in flight fail with Unavailable;
// the node goes on accepting new connections on the same socket.
func (n *Node) DropConnections() {
	c := &n.ctl
	c.mu.Lock()
	conns := make([]net.Conn, 0, len(c.conns))
	for tc := range c.conns {
		conns = append(conns, tc.Conn)
	}
	c.mu.Unlock()
	for _, conn := range conns {
		conn.Close()
	}
}

// Down takes the node off the air: the listener is closed (the socket
// removed) and every connection dropped, so clients see the runtime as
// unreachable until Up.
func (n *Node) Down() {
	c := &n.ctl
	c.mu.Lock()
	if c.down || c.lis == nil || c.stopped {
		c.mu.Unlock()
		return
	}
	c.down = true
	lis, next := c.lis, c.next
	c.next = nil
	c.mu.Unlock()
	lis.Close()
	if next != nil { // Up opened it, but Serve has not taken it yet
		next.Close()
	}
	n.DropConnections()
}

// Up serves again, on the same socket, after Down. It returns once the
// socket accepts connections.
func (n *Node) Up() error {
	c := &n.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.down || c.stopped {
		return nil
	}
	l, err := Listen(c.addr)
	if err != nil {
		return fmt.Errorf("up: %w", err)
	}
	c.next = l
	c.down = false
	c.cond.Broadcast()
	return nil
}

// trackingListener records the connections it accepts, so that
// DropConnections can close them.
type trackingListener struct {
	net.Listener
	c *serving
}

func (l *trackingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: conn, c: l.c}
	l.c.mu.Lock()
	l.c.conns[tc] = struct{}{}
	l.c.mu.Unlock()
	return tc, nil
}

type trackedConn struct {
	net.Conn
	c    *serving
	once sync.Once
}

func (tc *trackedConn) Close() error {
	tc.once.Do(func() {
		tc.c.mu.Lock()
		delete(tc.c.conns, tc)
		tc.c.mu.Unlock()
	})
	return tc.Conn.Close()
}

// Fault is an error the node returns instead of serving a call.
type Fault struct {
	// Method is the CRI method, short ("RemoveImage") or full
	// ("/runtime.v1.ImageService/RemoveImage").
	Method string
	// ID limits the fault to calls about one object: the image reference,
	// container ID or sandbox ID of the request. "" matches every call.
	ID string
	// Err is the gRPC code returned; codes.OK means codes.Unknown.
	Err codes.Code
	// Message is the error message; "" gives "injected fault".
	Message string
	// Times is how many matching calls fail; 0 means every one.
	Times int
}

func (f *Fault) matches(method string, req any) bool {
	if method != f.Method && !strings.HasSuffix(method, "/"+f.Method) {
		return false
	}
	if f.ID == "" {
		return true
	}
	id := requestID(req)
	return id == f.ID || strings.TrimPrefix(id, "sha256:") == strings.TrimPrefix(f.ID, "sha256:")
}

// requestID returns the object a request is about.
func requestID(req any) string {
	switch r := req.(type) {
	case interface{ GetContainerId() string }:
		return r.GetContainerId()
	case interface{ GetPodSandboxId() string }:
		return r.GetPodSandboxId()
	case interface{ GetImage() *runtimeapi.ImageSpec }:
		return r.GetImage().GetImage()
	}
	return ""
}

// InjectFault makes matching calls fail. Faults are checked in the order
// they were injected; the first match wins.
func (n *Node) InjectFault(f Fault) {
	if f.Err == codes.OK {
		f.Err = codes.Unknown
	}
	if f.Message == "" {
		f.Message = "injected fault"
	}
	n.ctl.mu.Lock()
	n.ctl.faults = append(n.ctl.faults, &f)
	n.ctl.mu.Unlock()
}

// ClearFaults removes every injected fault.
func (n *Node) ClearFaults() {
	n.ctl.mu.Lock()
	n.ctl.faults = nil
	n.ctl.mu.Unlock()
}

// SetLatency delays every call by d (0 removes the delay). A call whose
// context ends first fails with its context's error.
func (n *Node) SetLatency(d time.Duration) {
	n.ctl.mu.Lock()
	n.ctl.latency = d
	n.ctl.mu.Unlock()
}

// SetMutatingLatency delays the mutating calls (IsMutating) by d on top
// of SetLatency's: the demo's removals then take about as long as a real
// runtime's, so a pass's progress can be watched.
func (n *Node) SetMutatingLatency(d time.Duration) {
	n.ctl.mu.Lock()
	n.ctl.mutating = d
	n.ctl.mu.Unlock()
}

// Calls returns the full method name of every call served so far, in
// order, faulted calls included.
func (n *Node) Calls() []string {
	n.ctl.mu.Lock()
	defer n.ctl.mu.Unlock()
	return append([]string(nil), n.ctl.calls...)
}

// MutatingCalls returns the calls for which IsMutating is true.
func (n *Node) MutatingCalls() []string {
	var out []string
	for _, m := range n.Calls() {
		if IsMutating(m) {
			out = append(out, m)
		}
	}
	return out
}

// ResetCalls forgets the recorded calls.
func (n *Node) ResetCalls() {
	n.ctl.mu.Lock()
	n.ctl.calls = nil
	n.ctl.mu.Unlock()
}

// readOnlyMethods are the CRI methods that change nothing. Every other
// method counts as mutating, so a method added to the CRI later is
// suspect until listed here.
var readOnlyMethods = map[string]bool{
	"Version": true, "Status": true, "RuntimeConfig": true,
	"ListPodSandbox": true, "PodSandboxStatus": true, "StreamPodSandboxes": true,
	"ListContainers": true, "ContainerStatus": true, "StreamContainers": true,
	"ContainerStats": true, "ListContainerStats": true, "StreamContainerStats": true,
	"PodSandboxStats": true, "ListPodSandboxStats": true, "StreamPodSandboxStats": true,
	"ListMetricDescriptors": true, "ListPodSandboxMetrics": true, "StreamPodSandboxMetrics": true,
	"GetContainerEvents": true,
	"ListImages":         true, "ImageStatus": true, "ImageFsInfo": true, "StreamImages": true,
}

// IsMutating reports whether a CRI method (short or full name) can change
// the runtime: RemoveImage, StopContainer, RunPodSandbox, PullImage and
// the like. containerd's containers List (full name) changes nothing.
// Tests use it to prove a dry-run mutates nothing.
func IsMutating(method string) bool {
	if method == containerdapi.ListMethod {
		return false
	}
	if i := strings.LastIndex(method, "/"); i >= 0 {
		method = method[i+1:]
	}
	return !readOnlyMethods[method]
}

// admit records a call and applies the latency and the faults to it.
func (n *Node) admit(ctx context.Context, method string, req any) error {
	c := &n.ctl
	c.mu.Lock()
	c.calls = append(c.calls, method)
	d := c.latency
	if c.mutating > 0 && IsMutating(method) {
		d += c.mutating
	}
	var ferr error
	for i, f := range c.faults {
		if !f.matches(method, req) {
			continue
		}
		ferr = status.Error(f.Err, f.Message)
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				c.faults = append(c.faults[:i:i], c.faults[i+1:]...)
			}
		}
		break
	}
	c.mu.Unlock()
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	return ferr
}

func (n *Node) interceptUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := n.admit(ctx, info.FullMethod, req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (n *Node) interceptStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := n.admit(ss.Context(), info.FullMethod, nil); err != nil {
		return err
	}
	return handler(srv, ss)
}

// Start builds a node from o and serves it on endpoint (see Listen) in the
// background, as `nodegc --demo` and `nodegc simnode` do. Stop ends it;
// Wait returns how serving ended.
func Start(o Options, endpoint string) (*Node, error) {
	l, err := Listen(endpoint)
	if err != nil {
		return nil, err
	}
	n := New(o)
	n.ctl.done = make(chan struct{})
	go func() {
		n.ctl.serveErr = n.Serve(l)
		close(n.ctl.done)
	}()
	return n, nil
}

// Wait blocks until a node started with Start stops serving and returns
// Serve's error: nil after Stop.
func (n *Node) Wait() error {
	if n.ctl.done == nil {
		return errors.New("simnode: Wait on a node not started with Start")
	}
	<-n.ctl.done
	return n.ctl.serveErr
}
