package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// removeImageMethod is the CRI call criProxy can slow down or fail.
const removeImageMethod = "/runtime.v1.ImageService/RemoveImage"

// criProxy is the node's CRI socket as the kubelet and the agent see it:
// every call, unary or streaming, passed as it is to the real containerd,
// byte for byte. A test can slow RemoveImage down (SetRemoveImageDelay)
// to make an image pass last long enough to be interrupted, or hold the
// answers to one caller's RemoveImage calls (HoldRemoveImage); nothing
// else is changed. It knows each caller by its process ID (the socket's
// peer credentials), and records every RemoveImage with its caller.
type criProxy struct {
	upstream *grpc.ClientConn
	srv      *grpc.Server
	delay    atomic.Int64 // nanoseconds before each RemoveImage goes on
	fail     atomic.Int32 // RemoveImage calls still to fail
	done     chan struct{}

	mu       sync.Mutex
	hold     *removeHold       // nil: no answer is held
	removals []removeImageCall // every RemoveImage the runtime answered
}

// removeImageCall is one RemoveImage the runtime answered: who sent it
// (a process ID on the host) and for which image.
type removeImageCall struct {
	pid   int
	image string
}

// startCRIProxy listens on socket (created 0600) and forwards to the
// runtime at upstream; t.Cleanup stops it.
func startCRIProxy(t testing.TB, socket, upstream string) *criProxy {
	t.Helper()
	cc, err := grpc.NewClient("unix://"+upstream, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ul, err := net.Listen("unix", socket)
	if err != nil {
		cc.Close()
		t.Fatal(err)
	}
	l := peerListener{ul}
	if err := os.Chmod(socket, 0o600); err != nil {
		l.Close()
		cc.Close()
		t.Fatal(err)
	}
	p := &criProxy{upstream: cc, done: make(chan struct{})}
	p.srv = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(p.forward))
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(l)
	}()
	t.Cleanup(func() {
		p.srv.Stop() // ends the streams still open (the agent's event stream)
		<-p.done
		cc.Close()
		os.Remove(socket)
	})
	return p
}

// SetRemoveImageDelay makes each RemoveImage wait d before it goes to the
// runtime (0: none).
func (p *criProxy) SetRemoveImageDelay(d time.Duration) { p.delay.Store(int64(d)) }

// removeHold holds the answers to the RemoveImage calls of every caller
// but one: each call reaches the runtime (the image is removed then), and
// its caller waits for the answer until the hold is released.
type removeHold struct {
	except   int // the process whose calls are answered at once
	released chan struct{}
	once     sync.Once
	mu       sync.Mutex
	held     []string // the images whose removal waits to be answered
}

// HoldRemoveImage holds the answers to RemoveImage calls from every
// process but except (the kubelet, say) until the hold's Release, which
// t.Cleanup also calls.
func (p *criProxy) HoldRemoveImage(t testing.TB, except int) *removeHold {
	h := &removeHold{except: except, released: make(chan struct{})}
	p.mu.Lock()
	p.hold = h
	p.mu.Unlock()
	t.Cleanup(func() { p.release(h) })
	return h
}

// release ends the hold h: the answers held go out, and later calls are
// answered at once.
func (p *criProxy) release(h *removeHold) {
	p.mu.Lock()
	if p.hold == h {
		p.hold = nil
	}
	p.mu.Unlock()
	h.once.Do(func() { close(h.released) })
}

// Held returns the images whose removal is done and its answer held.
func (h *removeHold) Held() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.held)
}

// wait holds the answer to pid's removal of image, unless pid is the
// process excepted, until the hold is released or ctx ends.
func (h *removeHold) wait(ctx context.Context, pid int, image string) {
	if h == nil || pid == h.except {
		return
	}
	h.mu.Lock()
	h.held = append(h.held, image)
	h.mu.Unlock()
	select {
	case <-h.released:
	case <-ctx.Done():
	}
}

// RemovedBy returns the images whose RemoveImage from process pid the
// runtime answered, in order (answered with an error too).
func (p *criProxy) RemovedBy(pid int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, r := range p.removals {
		if r.pid == pid {
			out = append(out, r.image)
		}
	}
	return out
}

// FailRemoveImage makes the next n RemoveImage calls fail (codes.Internal)
// without reaching the runtime.
func (p *criProxy) FailRemoveImage(n int32) { p.fail.Store(n) }

// takeFailure reports whether this call is one of those to fail.
func (p *criProxy) takeFailure() bool {
	for {
		n := p.fail.Load()
		if n <= 0 {
			return false
		}
		if p.fail.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// forward passes one call through: the client's messages up, the
// runtime's down, and the runtime's status back as the call's own.
func (p *criProxy) forward(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	ctx := ss.Context()
	if method == removeImageMethod && p.takeFailure() {
		return status.Error(codes.Internal, "failed by the test's CRI proxy")
	}
	if d := time.Duration(p.delay.Load()); d > 0 && method == removeImageMethod {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // every CRI call's client half-closes after its one request
	}()
	cs, err := p.upstream.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	var image atomic.Value // the RemoveImage's image, once its request is read
	wg.Go(func() {
		for {
			var f frame
			if err := ss.RecvMsg(&f); err != nil {
				if errors.Is(err, io.EOF) {
					_ = cs.CloseSend()
				} else {
					cancel()
				}
				return
			}
			if method == removeImageMethod {
				var req runtimeapi.RemoveImageRequest
				if proto.Unmarshal(f.b, &req) == nil {
					image.Store(req.GetImage().GetImage())
				}
			}
			if err := cs.SendMsg(&f); err != nil {
				return
			}
		}
	})
	answered := false
	for {
		var f frame
		err := cs.RecvMsg(&f)
		if method == removeImageMethod && !answered {
			// The runtime has answered: the removal is done, or failed.
			answered = true
			p.answered(ctx, peerPID(ss), image.Load())
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := ss.SendMsg(&f); err != nil {
			cancel()
			return err
		}
	}
}

// answered records pid's RemoveImage of image (a string, or nil if its
// request was never read) and holds its answer if a hold says so.
func (p *criProxy) answered(ctx context.Context, pid int, image any) {
	id, _ := image.(string)
	p.mu.Lock()
	p.removals = append(p.removals, removeImageCall{pid: pid, image: id})
	h := p.hold
	p.mu.Unlock()
	h.wait(ctx, pid, id)
}

// peerListener accepts the CRI socket's connections, each knowing its
// peer's process ID (peerConn).
type peerListener struct{ net.Listener }

func (l peerListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	pid := 0
	if uc, ok := conn.(*net.UnixConn); ok {
		if raw, err := uc.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) {
				if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
					pid = int(cred.Pid)
				}
			})
		}
	}
	return peerConn{Conn: conn, pid: pid}, nil
}

// peerConn is a connection whose remote address carries the peer's
// process ID, which gRPC hands each call as its peer's address.
type peerConn struct {
	net.Conn
	pid int
}

func (c peerConn) RemoteAddr() net.Addr { return peerAddr{Addr: c.Conn.RemoteAddr(), pid: c.pid} }

// peerAddr is a peer's address with its process ID.
type peerAddr struct {
	net.Addr
	pid int
}

// peerPID is the process ID of the call's caller; 0 if unknown.
func peerPID(ss grpc.ServerStream) int {
	if p, ok := peer.FromContext(ss.Context()); ok {
		if a, ok := p.Addr.(peerAddr); ok {
			return a.pid
		}
	}
	return 0
}

// frame is one gRPC message, undecoded.
type frame struct{ b []byte }

// rawCodec passes frames as they are; its name is proto's, so both ends
// see the content type they expect.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.(*frame).b, nil }

func (rawCodec) Unmarshal(data []byte, v any) error {
	v.(*frame).b = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
