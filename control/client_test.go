package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/readcount"
)

func TestAStalePlanReplyIsErrStalePlan(t *testing.T) {
	stale := fmt.Errorf("apply: %w", &RemoteError{Status: 409, Reply: Error{Code: CodeStalePlan, Error: "stale plan: made 5m9s ago"}})
	if !errors.Is(stale, engine.ErrStalePlan) {
		t.Errorf("%v is not engine.ErrStalePlan", stale)
	}
	other := &RemoteError{Status: 500, Reply: Error{Code: "internal", Error: "list images: boom"}}
	if errors.Is(other, engine.ErrStalePlan) {
		t.Errorf("%v is engine.ErrStalePlan", other)
	}
}

// agentServing is a read-only client of an agent that answers every
// request with answer, on TCP rather than a root-only socket (the client
// checks the socket's peer, not what it answers); read counts the bytes
// of the replies the client read.
func agentServing(t *testing.T, answer http.HandlerFunc) (c *Client, read *atomic.Int64) {
	t.Helper()
	srv := httptest.NewServer(answer)
	t.Cleanup(srv.Close)
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}}
	t.Cleanup(tr.CloseIdleConnections)
	read = new(atomic.Int64)
	return &Client{hc: &http.Client{Transport: readcount.Transport{RT: tr, N: read}}, readOnly: true}, read
}

// endless writes an endless JSON string, or until the client goes.
func endless(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":"`)
		chunk := strings.Repeat("A", 64<<10)
		for {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}
}

func TestAnAgentsReplyIsReadNoFurtherThanItsBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		call   func(*Client) error
		what   string
		limit  int64
	}{
		{"the brief status", 200, func(c *Client) error { _, err := c.StatusBrief(context.Background()); return err },
			"GET /v1/status?brief=true", MaxBriefReply},
		{"the image filesystem", 200, func(c *Client) error { _, err := c.ImageFs(context.Background()); return err },
			"GET /v1/imagefs", MaxSmallReply},
		{"a stop", 200, func(c *Client) error { _, err := c.Stop(context.Background()); return err },
			"POST /v1/stop", MaxSmallReply},
		{"an error reply", 500, func(c *Client) error { _, err := c.Snapshot(context.Background()); return err },
			"", MaxSmallReply},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, read := agentServing(t, endless(tc.status))
			err := tc.call(c)
			var tl *TooLargeError
			switch {
			case tc.what == "":
				// An error reply past its bound is the HTTP status alone.
				var re *RemoteError
				if !errors.As(err, &re) || re.Reply.Error != "500 Internal Server Error" {
					t.Errorf("err = %v, want the agent's status alone", err)
				}
			case !errors.As(err, &tl) || tl.What != tc.what || tl.Limit != tc.limit:
				t.Errorf("err = %v, want a TooLargeError naming %s and %d bytes", err, tc.what, tc.limit)
			case !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), strconv.FormatInt(tc.limit, 10)):
				t.Errorf("err = %q, want it to name %s and its bound", err, tc.what)
			}
			if n := read.Load(); n > tc.limit+1 {
				t.Errorf("read %d bytes of the reply, bound %d", n, tc.limit)
			}
		})
	}
}

func TestAnAgentsStringsReachTheClientPrintable(t *testing.T) {
	const sgr = "\x1b[31mFAKE 3 synced\r"
	const shown = `\x1b[31mFAKE 3 synced\x0d`
	snap := SnapshotReply{Snapshot: engine.Snapshot{
		Images:     []engine.Image{{ID: "sha256:1", RepoTags: []string{"app:" + sgr}}},
		Sandboxes:  []engine.Sandbox{{ID: "s1", PodName: sgr, PodNamespace: "ns"}},
		Containers: []engine.Container{{ID: "c1", Name: sgr}},
	}, Policy: engine.Policy{Disk: engine.DiskPolicy{EvictionHard: map[string]string{sgr: sgr}}}}
	c, _ := agentServing(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/pause" {
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(Error{Error: "user " + sgr + " may not", Code: CodeReadOnly})
			return
		}
		_ = json.NewEncoder(w).Encode(snap)
	})
	got, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := got.Snapshot
	for what, v := range map[string]string{
		"an image's tag":        s.Images[0].RepoTags[0],
		"a pod's name":          s.Sandboxes[0].PodName,
		"a container's name":    s.Containers[0].Name,
		"a map's key and value": got.Policy.Disk.EvictionHard[shown],
	} {
		if !strings.Contains(v, shown) || strings.ContainsAny(v, "\x1b\r") {
			t.Errorf("%s = %q, want %q", what, v, shown)
		}
	}
	err = c.Pause(context.Background(), engine.Pause{})
	if err == nil || !strings.Contains(err.Error(), shown) || strings.ContainsAny(err.Error(), "\x1b\r") {
		t.Errorf("the agent's error = %q, want %q in it, escaped", err, shown)
	}
}
