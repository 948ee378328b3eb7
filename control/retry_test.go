package control

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// A 429 with Retry-After is sent again after the wait it names, a
// command's body too, within bounds; anything else is the reply.
func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name string
		// busy is how many 429s the server answers before a 200.
		busy       int
		retryAfter string
		// replayable: the request's body can be sent again (GetBody).
		replayable bool
		wantCode   int
		wantSent   int
		wantWaits  []time.Duration
	}{
		{name: "a 429 is sent again after its Retry-After", busy: 2, retryAfter: "1", replayable: true,
			wantCode: 200, wantSent: 3, wantWaits: []time.Duration{time.Second, time.Second}},
		{name: "an HTTP date past the bound gets the 429", busy: 1, retryAfter: time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), replayable: true,
			wantCode: 429, wantSent: 1},
		{name: "a date past is no wait", busy: 1, retryAfter: "Mon, 02 Jan 2006 15:04:05 GMT", replayable: true,
			wantCode: 200, wantSent: 2, wantWaits: []time.Duration{0}},
		{name: "a body that cannot be sent again gets the 429", busy: 1, retryAfter: "1", replayable: false,
			wantCode: 429, wantSent: 1},
		{name: "a Retry-After past the bound gets the 429", busy: 1, retryAfter: strconv.Itoa(int(maxRetryWait/time.Second) + 1), replayable: true,
			wantCode: 429, wantSent: 1},
		{name: "a 429 without Retry-After is the reply", busy: 1, retryAfter: "", replayable: true,
			wantCode: 429, wantSent: 1},
		{name: "at most maxRetries times", busy: maxRetries + 5, retryAfter: "0", replayable: true,
			wantCode: 429, wantSent: maxRetries + 1, wantWaits: []time.Duration{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, string(b))
				n := len(bodies)
				mu.Unlock()
				if n <= tc.busy {
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				w.WriteHeader(http.StatusOK)
			}))
			defer srv.Close()
			var waits []time.Duration
			rt := &retryAfter{rt: http.DefaultTransport, wait: func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			}}
			var body io.Reader = strings.NewReader(`{"kind":"images"}`)
			if !tc.replayable {
				body = io.NopCloser(body) // no GetBody
			}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/force", body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Errorf("reply %d, want %d", resp.StatusCode, tc.wantCode)
			}
			if len(bodies) != tc.wantSent {
				t.Errorf("sent %d times, want %d", len(bodies), tc.wantSent)
			}
			for i, b := range bodies {
				if b != `{"kind":"images"}` {
					t.Errorf("send %d had body %q, want the request's", i+1, b)
				}
			}
			if len(waits) != len(tc.wantWaits) {
				t.Fatalf("waited %v, want %v", waits, tc.wantWaits)
			}
			for i := range waits {
				if waits[i] != tc.wantWaits[i] {
					t.Errorf("waited %v, want %v", waits, tc.wantWaits)
				}
			}
		})
	}
}

// A client whose context ends while it waits gets the context's error.
func TestRetryAfterStopsWithContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	rt := &retryAfter{rt: http.DefaultTransport, wait: func(ctx context.Context, _ time.Duration) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("RoundTrip: %v, want context.Canceled", err)
	}
}

// A remote client waits out the agent's 429 (its reviews busy) and sends
// the request again, as its Retry-After says.
func TestRemoteClientHonoursRetryAfter(t *testing.T) {
	s := NewServer(Options{Scheduler: &fakeScheduler{}, Engine: fakeEngine{}})
	defer s.Close()
	inner := s.RemoteHandler(&KubeAuthorizer{Post: newReviewAPI().post, Node: "node-a"})
	var mu sync.Mutex
	refused := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		busy := refused < 2
		if busy {
			refused++
		}
		mu.Unlock()
		if busy {
			// As RemoteHandler answers ErrBusy, without the wait.
			w.Header().Set("Retry-After", "0")
			writeError(w, http.StatusTooManyRequests, CodeFailed, ErrBusy.Error())
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	c := NewRemoteClient(headerRT("Bearer operator"), base, false)
	defer c.Close()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{name: "a read", call: func() error { _, err := c.AgentStatus(t.Context()); return err }},
		{name: "a command with a body", call: func() error { _, err := c.Force(t.Context(), engine.PassImages); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			refused = 0
			mu.Unlock()
			if err := tc.call(); err != nil {
				t.Fatalf("after two 429s: %v, want the reply", err)
			}
		})
	}
}
