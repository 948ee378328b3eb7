package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMetricsListenerHoldsABoundedNumberOfConnections holds
// metricsConnections idle keep-alive connections to the agent's metrics
// listener, each after one answered request, as the attack that grew the
// agent past its memory limit did: one more (a probe, say) is served at
// once, and the connection idle longest is closed to make room for it.
func TestMetricsListenerHoldsABoundedNumberOfConnections(t *testing.T) {
	l, err := listenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := metricsServer(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	if srv.IdleTimeout <= 0 {
		t.Errorf("IdleTimeout %v: idle keep-alive connections would be held forever", srv.IdleTimeout)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	// get sends one request on c and reads its status line, waiting at
	// most wait.
	get := func(c net.Conn, r *bufio.Reader, wait time.Duration) error {
		c.SetDeadline(time.Now().Add(wait))
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: agent\r\n\r\n")); err != nil {
			return err
		}
		_, err := r.ReadString('\n')
		return err
	}
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	held := make([]net.Conn, metricsConnections)
	for i := range held {
		c, r := dial()
		if err := get(c, r, 30*time.Second); err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, metricsConnections, err)
		}
		held[i] = c
		if i == 0 {
			// The server marks a connection idle after the client may
			// already have read its answer: wait until the first is,
			// so that it is the one idle longest whatever the load.
			waitIdle(t, l.connGuard)
		}
	}
	extra, r := dial()
	if err := get(extra, r, 30*time.Second); err != nil {
		t.Fatalf("with %d idle connections held, one more was not served: %v", metricsConnections, err)
	}
	held[0].SetDeadline(time.Now().Add(30 * time.Second))
	if n, err := held[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the connection idle longest read %d bytes, %v; want it closed to make room (EOF): the listener holds any number", n, err)
	}
	held[1].SetDeadline(time.Now().Add(time.Second))
	if _, err := held[1].Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the second idle connection read %v; want it still open", err)
	}
}

// waitIdle waits until every connection g holds is idle between
// requests, for at most 30 s.
func waitIdle(t *testing.T, g *connGuard) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		g.mu.Lock()
		idle := true
		for _, e := range g.open {
			idle = idle && e.phase == phaseIdle
		}
		g.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a connection answered was still not idle after 30 s")
		}
	}
}

// serveMetrics serves h on listenMetrics(addr) with metricsServer until
// the test ends.
func serveMetrics(t *testing.T, addr string, h http.Handler) *metricsListener {
	t.Helper()
	l, err := listenMetrics(addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := metricsServer(l, h)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return l
}

// probeTimeout is the DaemonSet's probes' timeoutSeconds: a probe not
// answered within it fails.
const probeTimeout = 5 * time.Second

// probe is the kubelet's liveness probe: GET /healthz on a new
// connection, failing unless 200 comes within probeTimeout.
func probe(addr string) error {
	c, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(probeTimeout))
	if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: agent\r\nUser-Agent: kube-probe/1.36\r\nConnection: close\r\n\r\n")); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return fmt.Errorf("no answer within the probe's %s: %w", probeTimeout, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// agentLikeHandler stands for the agent's handler: the probes and
// /metrics answer at once without reading a body; /read (a handler that
// reads the whole body) and /hold (a slow scrape: it holds the request
// until its client goes) stand for the worst a handler can do.
func agentLikeHandler() http.Handler {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/readyz", ok)
	mux.HandleFunc("/metrics", ok)
	mux.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ok(w, r)
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	return mux
}

// TestMetricsListenerProbesAnswerWhateverOthersHold holds more
// connections than the listener's bound, each doing what an attacker on
// the node did (a slow body, a slow head) or holding a request in a
// handler, and probes /healthz as the kubelet does: it is answered each
// time. Stalled connections are closed by their deadlines; requests
// beyond their slots are refused at once.
func TestMetricsListenerProbesAnswerWhateverOthersHold(t *testing.T) {
	const slowBody = "Content-Length: 100000\r\n\r\nx" // one byte of 100,000, then nothing
	rows := []struct {
		name string
		held int
		send string
		// closed: every held connection is closed by the listener (a
		// deadline, or room for another); else refused connections beyond
		// served are answered with refused.
		closed  bool
		served  int
		refused int
	}{
		{name: "slow bodies to /healthz", held: metricsConnections + 8, send: "POST /healthz HTTP/1.1\r\nHost: agent\r\n" + slowBody, closed: true},
		{name: "slow bodies a handler reads", held: metricsRequests + 12, send: "POST /read HTTP/1.1\r\nHost: agent\r\n" + slowBody, closed: true},
		{name: "slow heads", held: metricsConnections + 8, send: "GET /healthz HTTP/1.1\r\nHost: agent\r\n", closed: true},
		{name: "requests held in handlers", held: 130, send: "GET /hold HTTP/1.1\r\nHost: agent\r\n\r\n",
			served: metricsRequests, refused: http.StatusServiceUnavailable},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			l := serveMetrics(t, "127.0.0.1:0", agentLikeHandler())
			addr := l.Addr().String()
			held := make([]net.Conn, row.held)
			for i := range held {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatalf("connection %d: %v", i+1, err)
				}
				t.Cleanup(func() { c.Close() })
				if _, err := c.Write([]byte(row.send)); err != nil {
					t.Fatalf("connection %d: %v", i+1, err)
				}
				held[i] = c
			}
			// The kubelet's liveness probe fails the agent after 3 misses.
			for i := range 3 {
				if err := probe(addr); err != nil {
					t.Fatalf("probe %d with %d connections held (%s): %v", i+1, row.held, row.name, err)
				}
			}
			if row.closed {
				for i, c := range held {
					c.SetReadDeadline(time.Now().Add(time.Minute))
					if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
						t.Fatalf("held connection %d still open after a minute: no deadline closed it", i+1)
					}
				}
				return
			}
			// Those beyond their slots are refused at once; the others
			// keep their requests. Read until every refusal is in.
			statuses := make(chan int, len(held))
			for _, c := range held {
				go func() {
					c.SetReadDeadline(time.Now().Add(time.Minute))
					resp, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil {
						statuses <- 0
						return
					}
					resp.Body.Close()
					statuses <- resp.StatusCode
				}()
			}
			counts := map[int]int{}
			for counts[row.refused] < row.held-row.served {
				s := <-statuses
				if s != row.refused && s != http.StatusOK {
					t.Fatalf("a held connection got %d; want %d or 200 (counts so far %v)", s, row.refused, counts)
				}
				counts[s]++
				if counts[http.StatusOK] > row.served {
					t.Fatalf("%d connections served, want at most %d", counts[http.StatusOK], row.served)
				}
			}
		})
	}
}

// TestListenMetricsAddresses pins what --metrics-bind-address binds:
// localhost is both loopbacks on one port, a malformed address is bad
// input naming the flag (exit 2), and an address another program holds
// is not an error: it is bound once it is free.
func TestListenMetricsAddresses(t *testing.T) {
	t.Run("localhost is 127.0.0.1 and [::1] on one port", func(t *testing.T) {
		l := serveMetrics(t, "localhost:0", agentLikeHandler())
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		want := []string{"127.0.0.1:" + port}
		if l6, err := net.Listen("tcp", "[::1]:0"); err == nil {
			l6.Close()
			want = append(want, "[::1]:"+port)
		}
		if got := l.listening(); !slices.Equal(got, want) {
			t.Fatalf("listening on %v, want %v", got, want)
		}
		for _, a := range want {
			if err := probe(a); err != nil {
				t.Errorf("%s: %v", a, err)
			}
		}
	})
	for _, addr := range []string{"nonsense", "127.0.0.1", "localhost:notaport", "256.1.1.1:1017"} {
		t.Run("malformed "+addr, func(t *testing.T) {
			l, err := listenMetrics(addr)
			var ae *AddressError
			if !errors.As(err, &ae) || !strings.HasPrefix(err.Error(), "--metrics-bind-address: ") {
				if l != nil {
					l.Close()
				}
				t.Fatalf("listenMetrics(%q): %v; want a usage error naming the flag", addr, err)
			}
		})
	}
	t.Run("an address in use is bound once it is free", func(t *testing.T) {
		squat, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer squat.Close()
		addr := squat.Addr().String()
		l := serveMetrics(t, addr, agentLikeHandler())
		if !slices.Equal(l.pending, []string{addr}) || len(l.listening()) != 0 {
			t.Fatalf("pending %v, listening %v; want %s pending", l.pending, l.listening(), addr)
		}
		lines := make(chan string, 100)
		log := slog.New(slog.NewJSONHandler(lineWriter(lines), nil))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); l.keepBinding(ctx, log) }()
		defer func() { cancel(); <-done }()
		line := <-lines
		if !strings.Contains(line, `"level":"ERROR"`) || !strings.Contains(line, "--metrics-bind-address: "+addr+" is held by another program") {
			t.Fatalf("first line %s; want an error naming the flag and %s", line, addr)
		}
		squat.Close()
		for line = range lines {
			if strings.Contains(line, `"msg":"metrics listener bound"`) {
				break
			}
		}
		if err := probe(addr); err != nil {
			t.Fatalf("after %s: %v", line, err)
		}
	})
}

// lineWriter sends each write (a log line) to lines.
type lineWriter chan<- string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// TestMetricsPortWarning: a port any user may bind (at or above
// net.ipv4.ip_unprivileged_port_start) is warned about, naming the flag
// and the sysctl; the default port is not, where the sysctl is the
// kernel's default.
func TestMetricsPortWarning(t *testing.T) {
	rows := []struct {
		addr  string
		start int
		warn  bool
	}{
		{DefaultAddress, 1024, false},
		{":" + DefaultPort, 1024, false},
		{"127.0.0.1:10263", 1024, true},
		{"[::1]:1024", 1024, true},
		{"127.0.0.1:0", 1024, false},
		{DefaultAddress, 0, true}, // a network namespace that lets anyone bind any port
	}
	for _, r := range rows {
		w := metricsPortWarning(r.addr, r.start)
		if (w != "") != r.warn {
			t.Errorf("%s with ip_unprivileged_port_start=%d: warning %q, want one: %v", r.addr, r.start, w, r.warn)
		}
		if w != "" && (!strings.HasPrefix(w, "--metrics-bind-address: ") || !strings.Contains(w, fmt.Sprintf("net.ipv4.ip_unprivileged_port_start=%d", r.start))) {
			t.Errorf("warning %q names neither the flag nor the sysctl", w)
		}
	}
	if p, _ := strconv.Atoi(DefaultPort); p >= 1024 {
		t.Errorf("the default port %d is one any user may bind by default", p)
	}
}
