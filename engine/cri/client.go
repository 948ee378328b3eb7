package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
)

var errUnavailable = engine.ErrUnavailable

// ErrPermissionDenied is wrapped, together with engine.ErrUnavailable, by
// the error for a runtime socket the caller may not talk to.
var ErrPermissionDenied = errors.New("permission denied")

// Defaults of Options.
const (
	DefaultReadTimeout   = 30 * time.Second
	DefaultRemoveTimeout = 2 * time.Minute
	// DefaultMaxRecvMsgSize fits a ListContainers of 100,000 containers
	// (about 50 MiB) with room to spare; the usual 16 MiB does not.
	DefaultMaxRecvMsgSize = 512 << 20
	// DefaultStatusConcurrency bounds the ContainerStatus calls in flight
	// when ListContainers fetches exit details.
	DefaultStatusConcurrency = 8
)

// Options configure a Client. Zero fields take the defaults.
type Options struct {
	// ReadTimeout bounds each reading call (default 30 s).
	ReadTimeout time.Duration
	// RemoveTimeout bounds each removal (default 2 min); StopContainer
	// gets its grace period on top.
	RemoveTimeout time.Duration
	// MaxRecvMsgSize is the largest response accepted (default 512 MiB).
	MaxRecvMsgSize int
	// ExitDetails makes ListContainers fill FinishedAt, ExitCode and
	// LogPath of the containers that are not running, which the CRI list
	// does not carry, by one ContainerStatus call each. Exited containers
	// do not change, so their details are cached and each is asked once;
	// the first listing of a node with many dead containers pays for all
	// of them (see BenchmarkListContainersExitDetails). Off by default:
	// the planners do not need them.
	ExitDetails bool
	// StatusConcurrency bounds the ContainerStatus calls in flight for
	// ExitDetails (default 8).
	StatusConcurrency int
	// SandboxImages seeds Info's cache of the image each sandbox runs, by
	// sandbox ID, with what an earlier run learned (SandboxImages): a
	// sandbox's image never changes, so only sandboxes missing from it
	// cost a status call.
	SandboxImages map[string]string
	// Logger, when set, gets a debug line from each Info: how many READY
	// sandboxes there were, how many of their images were known, how many
	// came in bulk from containerd's containers service (and why none did,
	// when that call failed) and how many it asked the runtime about one by
	// one (a plan with an empty state dir on a runtime with no bulk answer
	// asks every READY sandbox, which is most of its cost on a node of
	// many pods).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.RemoveTimeout <= 0 {
		o.RemoveTimeout = DefaultRemoveTimeout
	}
	if o.MaxRecvMsgSize <= 0 {
		o.MaxRecvMsgSize = DefaultMaxRecvMsgSize
	}
	if o.StatusConcurrency <= 0 {
		o.StatusConcurrency = DefaultStatusConcurrency
	}
	return o
}

// Client talks CRI to one runtime. It implements engine.Runtime (reading
// and removing); ReadOnly gives a value that can only read. It is safe for
// concurrent use.
type Client struct {
	o        Options
	endpoint string
	conn     *grpc.ClientConn
	rt       runtimeapi.RuntimeServiceClient
	img      runtimeapi.ImageServiceClient

	mu             sync.Mutex
	exits          map[string]exitDetails // by container ID, exited containers only
	sandboxImages  map[string]string      // by sandbox ID; "" when the runtime does not say
	sandboxLearnt  bool                   // sandboxImages changed since Dial
	runtimeName    string
	runtimeVersion string
}

var (
	_ engine.Runtime           = (*Client)(nil)
	_ engine.SandboxInfoReader = (*Client)(nil)
	_ engine.SandboxInfoReader = readOnly{}
)

// Dial connects to the runtime at endpoint ("unix:///path" or a bare path)
// and checks that it answers a CRI Version call. It fails fast: a missing
// socket, a refused connection or a runtime that does not answer gives an
// error wrapping engine.ErrUnavailable; a socket the caller may not use
// gives one that also wraps ErrPermissionDenied and says that root is
// needed; a malformed endpoint wraps ErrInvalidEndpoint.
func Dial(ctx context.Context, endpoint string, o Options) (*Client, error) {
	o = o.withDefaults()
	ep, err := Normalize(endpoint)
	if err != nil {
		return nil, err
	}
	if err := checkSocket(ctx, ep); err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(ep,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.MaxRecvMsgSize)),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  100 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   3 * time.Second,
			},
			MinConnectTimeout: 5 * time.Second,
		}),
		grpc.WithUnaryInterceptor(retryAfterReconnect),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", ep, err)
	}
	c := &Client{
		o:             o,
		endpoint:      ep,
		conn:          conn,
		rt:            runtimeapi.NewRuntimeServiceClient(conn),
		img:           runtimeapi.NewImageServiceClient(conn),
		exits:         make(map[string]exitDetails),
		sandboxImages: maps.Clone(o.SandboxImages),
	}
	if c.sandboxImages == nil {
		c.sandboxImages = make(map[string]string)
	}
	v, err := c.version(ctx)
	if err != nil {
		conn.Close()
		if status.Code(err) == codes.Unimplemented {
			return nil, fmt.Errorf("%w: %s does not serve the CRI v1 API: %w", errUnavailable, ep, err)
		}
		if !errors.Is(err, errUnavailable) {
			// A runtime that does not answer Version cannot be used.
			err = fmt.Errorf("%w: %w", errUnavailable, err)
		}
		return nil, err
	}
	c.runtimeName, c.runtimeVersion = v.GetRuntimeName(), v.GetRuntimeVersion()
	return c, nil
}

// checkSocket makes the first connection by hand, so that a missing
// socket or a permission problem is reported plainly instead of as a gRPC
// transport error after a timeout.
func checkSocket(ctx context.Context, ep string) error {
	p := socketPath(ep)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return permissionError(ep)
		}
		return fmt.Errorf("%w: no socket at %s", errUnavailable, ep)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "unix", p)
	if err != nil {
		return dialError(ep, err)
	}
	conn.Close()
	return nil
}

// dialError classifies a failed connection to the runtime socket.
func dialError(ep string, err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		return permissionError(ep)
	}
	return fmt.Errorf("%w: connect to %s: %v", errUnavailable, ep, err)
}

func permissionError(ep string) error {
	return fmt.Errorf("%w: talking to %s needs root, as crictl does (%w)", ErrPermissionDenied, ep, errUnavailable)
}

// reconnectWait bounds how long a call that found the runtime unreachable
// waits for a fresh connection before its one retry.
const reconnectWait = 2 * time.Second

// retryAfterReconnect retries, once, a call that failed with Unavailable
// before it was sent: no transport took it, because the connection was not
// up. It resets the reconnect backoff and waits (at most reconnectWait)
// for the connection to be ready again. Without it, the first calls after
// a runtime restart fail while gRPC sits in its backoff, and a pass right
// after containerd comes back fails for nothing. A call that a transport
// took is not retried, whatever became of the connection: the runtime may
// have acted on it, and its error is the news. Whether a transport took it
// is what gRPC reports as the call's peer; the channel's state read before
// the call cannot say, since gRPC publishes READY after a transport is
// already carrying calls (a call in flight on a connection then dropped
// was retried, and hung on the new one: TestDroppedConnection under -race,
// 7 of 600 runs). A runtime that stays down costs each call reconnectWait
// and then reports the first error.
func retryAfterReconnect(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var sent peer.Peer
	err := invoke(ctx, method, req, reply, cc, append(opts, grpc.Peer(&sent))...)
	if status.Code(err) != codes.Unavailable || sent.Addr != nil {
		return err
	}
	cc.ResetConnectBackoff()
	cc.Connect()
	wctx, cancel := context.WithTimeout(ctx, reconnectWait)
	defer cancel()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		if s == connectivity.Shutdown || !cc.WaitForStateChange(wctx, s) {
			return err
		}
	}
	return invoke(ctx, method, req, reply, cc, opts...)
}

// Endpoint returns the endpoint the client talks to, as "unix:///path".
func (c *Client) Endpoint() string { return c.endpoint }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// mapError wraps a failed call's error for the engine: NotFound wraps
// engine.ErrNotFound, Unavailable wraps engine.ErrUnavailable (and makes
// the next call reconnect at once). The gRPC status stays reachable with
// status.FromError.
func (c *Client) mapError(op string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	switch st.Code() {
	case codes.NotFound:
		return fmt.Errorf("%s: %w: %w", op, engine.ErrNotFound, err)
	case codes.Unavailable:
		c.conn.ResetConnectBackoff()
		if strings.Contains(st.Message(), "permission denied") {
			return fmt.Errorf("%s: %w", op, permissionError(c.endpoint))
		}
		return fmt.Errorf("%s: %w: %w", op, errUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func (c *Client) readContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.o.ReadTimeout)
}

func (c *Client) removeContext(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.o.RemoveTimeout+extra)
}

func (c *Client) version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := c.readContext(ctx)
	defer cancel()
	v, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		return nil, c.mapError("version of "+c.endpoint, err)
	}
	return v, nil
}
