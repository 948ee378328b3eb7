package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
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
