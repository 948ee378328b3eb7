package main

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestMetricsListenerServesABoundedNumberOfConnections holds
// metricsConnections idle keep-alive connections to the agent's metrics
// listener, each after one answered request, as the attack that grew the
// agent past its memory limit did: one more is not served while they are
// held, and is served once one of them closes.
func TestMetricsListenerServesABoundedNumberOfConnections(t *testing.T) {
	l, err := listenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := metricsServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
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
	if err := get(extra, r, time.Second); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("with %d connections held, one more was answered (%v): the listener serves any number", metricsConnections, err)
	}
	held[0].Close()
	extra.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatalf("after one held connection closed, the waiting one was not served: %v", err)
	}
}
