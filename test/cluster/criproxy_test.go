package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// removeImageMethod is the CRI call criProxy can slow down or fail.
const removeImageMethod = "/runtime.v1.ImageService/RemoveImage"

// criProxy is the node's CRI socket as the kubelet and the agent see it:
// every call, unary or streaming, passed as it is to the real containerd,
// byte for byte. A test can slow RemoveImage down (SetRemoveImageDelay)
// to make an image pass last long enough to be interrupted; nothing else
// is changed, and the kubelet never calls RemoveImage here (its image GC
// band is one it never reaches).
type criProxy struct {
	upstream *grpc.ClientConn
	srv      *grpc.Server
	delay    atomic.Int64 // nanoseconds before each RemoveImage goes on
	fail     atomic.Int32 // RemoveImage calls still to fail
	done     chan struct{}
}

// startCRIProxy listens on socket (created 0600) and forwards to the
// runtime at upstream; t.Cleanup stops it.
func startCRIProxy(t testing.TB, socket, upstream string) *criProxy {
	t.Helper()
	cc, err := grpc.NewClient("unix://"+upstream, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		cc.Close()
		t.Fatal(err)
	}
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
			if err := cs.SendMsg(&f); err != nil {
				return
			}
		}
	})
	for {
		var f frame
		if err := cs.RecvMsg(&f); err != nil {
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
