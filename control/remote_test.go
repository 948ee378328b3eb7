package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// fakeScheduler counts the commands that reach it.
type fakeScheduler struct{ forced atomic.Int32 }

func (f *fakeScheduler) Status() engine.Status { return engine.Status{} }
func (f *fakeScheduler) Force(context.Context, engine.PassKind) (engine.PassReport, error) {
	f.forced.Add(1)
	return engine.PassReport{ID: 1, StartedAt: time.Unix(1, 0)}, nil
}
func (f *fakeScheduler) Preview(context.Context, engine.PassKind) (engine.PassReport, error) {
	return engine.PassReport{}, nil
}
func (f *fakeScheduler) Apply(context.Context, engine.Plan) (engine.PassReport, error) {
	return engine.PassReport{}, nil
}
func (f *fakeScheduler) Pause(context.Context, engine.Pause) error { return nil }
func (f *fakeScheduler) Resume(context.Context) error              { return nil }
func (f *fakeScheduler) Stop() bool                                { return false }
func (f *fakeScheduler) Subscribe() (<-chan engine.Notice, func()) {
	ch := make(chan engine.Notice)
	return ch, func() { close(ch) }
}

type fakeEngine struct{}

func (fakeEngine) Snapshot(context.Context) (engine.Snapshot, error) { return engine.Snapshot{}, nil }
func (fakeEngine) PlanAt(context.Context, engine.PassKind, time.Time) (engine.Snapshot, engine.Plan, error) {
	return engine.Snapshot{}, engine.Plan{}, nil
}
func (fakeEngine) RemeasureImageFs(context.Context) (engine.FsStats, error) {
	return engine.FsStats{}, nil
}
func (fakeEngine) ContainersChanged(context.Context, uint64) (bool, error) { return false, nil }
func (fakeEngine) EffectivePolicy(time.Time) engine.Policy                 { return engine.Policy{} }
func (fakeEngine) Policy() engine.Policy                                   { return engine.Policy{} }
func (fakeEngine) MaxApplyBytes() int64                                    { return maxBody }

// fakeAPI answers TokenReview and SubjectAccessReview as an API server
// whose users are tokens: "reader" may get, "operator" get and update,
// anything else is not authenticated. It counts the reviews.
type fakeAPI struct{ reviews atomic.Int32 }

func (a *fakeAPI) post(_ context.Context, path string, body []byte) ([]byte, error) {
	a.reviews.Add(1)
	switch {
	case strings.HasSuffix(path, "/tokenreviews"):
		var tr tokenReview
		if err := json.Unmarshal(body, &tr); err != nil {
			return nil, err
		}
		if tr.Spec.Token == "reader" || tr.Spec.Token == "operator" {
			tr.Status.Authenticated = true
			tr.Status.User.Username = tr.Spec.Token
		}
		return json.Marshal(tr)
	case strings.HasSuffix(path, "/subjectaccessreviews"):
		var ar accessReview
		if err := json.Unmarshal(body, &ar); err != nil {
			return nil, err
		}
		ra := ar.Spec.ResourceAttributes
		if ra.Group != "nodegc.io" || ra.Resource != "nodes" || ra.Name != "node-a" {
			return nil, errors.New("unexpected attributes")
		}
		ar.Status.Allowed = ar.Spec.User == "operator" || ar.Spec.User == "reader" && ra.Verb == VerbRead
		return json.Marshal(ar)
	}
	return nil, errors.New("unexpected path " + path)
}

func TestRemoteHandlerAuthorizesEveryRequest(t *testing.T) {
	sched := &fakeScheduler{}
	s := NewServer(Options{Scheduler: sched, Engine: fakeEngine{}})
	defer s.Close()
	api := &fakeAPI{}
	srv := httptest.NewServer(s.RemoteHandler(&KubeAuthorizer{Post: api.post, Node: "node-a"}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	// withToken is the transport of a user whose kubeconfig holds token
	// ("" for a client certificate: nothing to pass on).
	withToken := func(token string) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			if token != "" {
				r.Header.Set(AuthorizationHeader, "Bearer "+token)
			}
			return http.DefaultTransport.RoundTrip(r)
		})
	}
	ctx := t.Context()
	for _, tc := range []struct {
		name      string
		token     string
		status    int // of GET /v1/status; 0 = ok
		readOnly  bool
		forceCode int // of POST /v1/force; 0 = ok
	}{
		{name: "no token is refused everything", token: "", status: 401, forceCode: 401},
		{name: "a token the API server rejects is refused everything", token: "forged", status: 401, forceCode: 401},
		{name: "a user with get only reads, read-only, and may not force", token: "reader", readOnly: true, forceCode: 403},
		{name: "a user with update forces", token: "operator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := sched.forced.Load()
			c := NewRemoteClient(withToken(tc.token), base, false)
			defer c.Close()
			st, err := c.AgentStatus(ctx)
			if got := code(err); got != tc.status {
				t.Fatalf("status: code %d (%v), want %d", got, err, tc.status)
			}
			if err == nil && st.ReadOnly != tc.readOnly {
				t.Errorf("status says read-only %v, want %v", st.ReadOnly, tc.readOnly)
			}
			_, err = c.Force(ctx, engine.PassImages)
			if got := code(err); got != tc.forceCode {
				t.Fatalf("force: code %d (%v), want %d", got, err, tc.forceCode)
			}
			forced := sched.forced.Load() - before
			if want := int32(0); tc.forceCode == 0 {
				want = 1
				if forced != want {
					t.Errorf("scheduler forced %d times, want %d", forced, want)
				}
			} else if forced != 0 {
				t.Errorf("a refused force reached the scheduler %d times", forced)
			}
		})
	}
	// A read-only client's commands are refused whatever its rights.
	ro := NewRemoteClient(withToken("operator"), base, true)
	defer ro.Close()
	if _, err := ro.Force(ctx, engine.PassImages); code(err) != 403 {
		t.Errorf("a read-only client's force: %v, want 403", err)
	}
	// Decisions are cached, a rejected token's too: asking again costs
	// the API server nothing.
	forged := NewRemoteClient(withToken("forged"), base, false)
	defer forged.Close()
	forged.AgentStatus(ctx)
	n := api.reviews.Load()
	if _, err := forged.AgentStatus(ctx); code(err) != 401 {
		t.Errorf("forged token again: %v, want 401", err)
	}
	c := NewRemoteClient(withToken("operator"), base, false)
	defer c.Close()
	if _, err := c.AgentStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := api.reviews.Load(); got != n {
		t.Errorf("a cached decision made %d more reviews", got-n)
	}
}

func TestRemoteHandlerWithoutAuthorizerRefusesAll(t *testing.T) {
	s := NewServer(Options{Scheduler: &fakeScheduler{}, Engine: fakeEngine{}})
	defer s.Close()
	srv := httptest.NewServer(s.RemoteHandler(nil))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	c := NewRemoteClient(http.DefaultTransport, base, false)
	defer c.Close()
	if _, err := c.AgentStatus(t.Context()); code(err) != http.StatusServiceUnavailable {
		t.Fatalf("status without an authorizer: %v, want 503", err)
	}
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func code(err error) int {
	var re *RemoteError
	if errors.As(err, &re) {
		return re.Status
	}
	if err != nil {
		return -1
	}
	return 0
}

// reviewAPI answers TokenReview and SubjectAccessReview as an API server
// whose tokens are named in users, their users' verbs in rights (both
// changeable while the test runs). A token "made-up-…" is not accepted,
// after the test closes release when block is set: its review is in
// flight until then, and entered says it began.
type reviewAPI struct {
	mu     sync.Mutex
	users  map[string]string
	rights map[string][]string
	// fail makes every review fail, as an API server that cannot be reached.
	fail bool

	block   bool
	release chan struct{}
	entered chan string

	tokenReviews, accessReviews atomic.Int32
}

func newReviewAPI() *reviewAPI {
	return &reviewAPI{
		users: map[string]string{"operator": "operator", "reader": "reader", "viewer": "viewer"},
		rights: map[string][]string{
			"operator": {VerbRead, VerbCommand},
			"reader":   {VerbRead},
			"viewer":   {VerbRead},
		},
		release: make(chan struct{}),
		entered: make(chan string, 64),
	}
}

func (a *reviewAPI) post(ctx context.Context, path string, body []byte) ([]byte, error) {
	a.mu.Lock()
	fail := a.fail
	a.mu.Unlock()
	if fail {
		return nil, errors.New("connection refused")
	}
	switch {
	case strings.HasSuffix(path, "/tokenreviews"):
		a.tokenReviews.Add(1)
		var tr tokenReview
		if err := json.Unmarshal(body, &tr); err != nil {
			return nil, err
		}
		if a.block && strings.HasPrefix(tr.Spec.Token, "made-up-") {
			a.entered <- tr.Spec.Token
			select {
			case <-a.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		a.mu.Lock()
		user, ok := a.users[tr.Spec.Token]
		a.mu.Unlock()
		tr.Status.Authenticated, tr.Status.User.Username = ok, user
		return json.Marshal(tr)
	case strings.HasSuffix(path, "/subjectaccessreviews"):
		a.accessReviews.Add(1)
		var ar accessReview
		if err := json.Unmarshal(body, &ar); err != nil {
			return nil, err
		}
		a.mu.Lock()
		ar.Status.Allowed = slices.Contains(a.rights[ar.Spec.User], ar.Spec.ResourceAttributes.Verb)
		a.mu.Unlock()
		return json.Marshal(ar)
	}
	return nil, errors.New("unexpected path " + path)
}

func (a *reviewAPI) reviews() int32 { return a.tokenReviews.Load() + a.accessReviews.Load() }

// fakeClock is a clock the test moves; waiting gets a value each time
// something waits on it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []fakeTimer
	waiting chan struct{}
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), waiting: make(chan struct{}, 64)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
	} else {
		c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), ch: ch})
	}
	c.mu.Unlock()
	c.waiting <- struct{}{}
	return ch
}

// Step moves the clock by d and fires the timers due.
func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
		} else {
			t.ch <- c.now
		}
	}
	c.timers = kept
}

// Tokens anyone can make up must not keep the users the API server
// accepts from being reviewed: those are reviewed in slots of their own,
// and one address holds at most half of the made-up tokens' slots.
func TestReviewSlotsAreFair(t *testing.T) {
	api := newReviewAPI()
	api.block = true
	clk := newFakeClock()
	s := NewServer(Options{Scheduler: &fakeScheduler{}, Engine: fakeEngine{}})
	defer s.Close()
	h := s.RemoteHandler(&KubeAuthorizer{Post: api.post, Node: "node-a", Now: clk.Now})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(api.release)

	get := func(token, addr string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/v1/status", nil)
		req.RemoteAddr = addr
		req.Header.Set(AuthorizationHeader, "Bearer "+token)
		h.ServeHTTP(rec, req)
		return rec
	}
	// hold sends a made-up token from addr: true when its review is in
	// flight (it holds a slot), false when it was refused 429.
	madeUp := 0
	hold := func(t *testing.T, addr string) bool {
		madeUp++
		token := fmt.Sprintf("made-up-%d", madeUp)
		codes := make(chan int, 1)
		wg.Go(func() { codes <- get(token, addr).Code })
		select {
		case <-api.entered:
			return true
		case code := <-codes:
			if code != http.StatusTooManyRequests {
				t.Errorf("a made-up token's request: %d, want 429 or a review in flight", code)
			}
			return false
		}
	}
	const (
		apiServer = "10.0.0.1:43210" // the pods proxy
		attacker  = "192.0.2.66:5555"
		attacker2 = "192.0.2.67:5555"
	)
	for _, step := range []struct {
		name    string
		advance time.Duration
		token   string // "" sends a made-up token, whose review is held
		addr    string
		held    bool // for a made-up token: its review is in flight
		want    int  // for a real one: the reply's status
	}{
		{name: "an operator's first request is reviewed", token: "operator", addr: apiServer, want: 200},
		{name: "a made-up token is reviewed", addr: attacker, held: true},
		{name: "a second made-up token from the same address is reviewed", addr: attacker, held: true},
		{name: "one address holds at most half the made-up tokens' slots", addr: attacker, held: false},
		{name: "a new user through the API server is reviewed beside them", token: "reader", addr: apiServer, want: 200},
		{name: "another address takes the rest of the made-up tokens' slots", addr: attacker2, held: true},
		{name: "and its second", addr: attacker2, held: true},
		{name: "which are then all taken", addr: attacker2, held: false},
		{name: "a new user waits, told when to try again, while made-up tokens hold every slot of theirs", token: "viewer", addr: apiServer, want: 429},
		{name: "a user accepted before is reviewed again, its decision expired, in slots of its own", advance: cacheTTL, token: "operator", addr: apiServer, want: 200},
	} {
		clk.Step(step.advance)
		if step.token == "" {
			if got := hold(t, step.addr); got != step.held {
				t.Fatalf("%s: review in flight %v, want %v", step.name, got, step.held)
			}
			continue
		}
		rec := get(step.token, step.addr)
		if rec.Code != step.want {
			t.Fatalf("%s: %d %s, want %d", step.name, rec.Code, rec.Body, step.want)
		}
		if rec.Code == http.StatusTooManyRequests && rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s: 429 without Retry-After", step.name)
		}
	}
}

// The cache keeps the decisions of tokens the API server accepted apart
// from the tokens it rejected: any number of made-up tokens evicts none,
// and a status's two verbs share their token review.
func TestReviewCacheKeepsAcceptedTokens(t *testing.T) {
	api := newReviewAPI()
	clk := newFakeClock()
	auth := &KubeAuthorizer{Post: api.post, Node: "node-a", Now: clk.Now}
	ctx := t.Context()
	authorize := func(token, verb string) (Decision, error) {
		return auth.Authorize(withSource(ctx, "10.0.0.1"), token, verb)
	}
	for _, token := range []string{"operator", "reader"} {
		for _, verb := range []string{VerbRead, VerbCommand} {
			if _, err := authorize(token, verb); err != nil {
				t.Fatalf("%s %s: %v", token, verb, err)
			}
		}
	}
	// Each token's two verbs share its token review.
	if tr, ar := api.tokenReviews.Load(), api.accessReviews.Load(); tr != 2 || ar != 4 {
		t.Errorf("two tokens' two verbs made %d token reviews and %d access reviews, want 2 and 4", tr, ar)
	}
	for i := range 3 * cacheMax {
		if _, err := authorize(fmt.Sprintf("forged-%d", i), VerbRead); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("a forged token: %v, want ErrUnauthenticated", err)
		}
	}
	before := api.reviews()
	for _, tc := range []struct {
		name, token, verb string
		allowed           bool
	}{
		{name: "an operator's read is still cached", token: "operator", verb: VerbRead, allowed: true},
		{name: "an operator's command is still cached", token: "operator", verb: VerbCommand, allowed: true},
		{name: "a reader's refusal is still cached", token: "reader", verb: VerbCommand, allowed: false},
	} {
		d, err := authorize(tc.token, tc.verb)
		if err != nil || d.Allowed != tc.allowed || d.User != tc.token {
			t.Errorf("%s: %+v, %v; want user %s allowed %v", tc.name, d, err, tc.token, tc.allowed)
		}
	}
	if got := api.reviews() - before; got != 0 {
		t.Errorf("after %d forged tokens, the accepted tokens' decisions cost %d more reviews; want 0 (evicted)", 3*cacheMax, got)
	}
}

// A notices stream is authorized again when its decision expires and
// ends when the answer turns: no right, no token, or no answer.
func TestStreamsAreReauthorized(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*reviewAPI)
		ends   bool
	}{
		{name: "a right kept keeps the stream", change: func(*reviewAPI) {}, ends: false},
		{name: "a revoked right ends the stream", change: func(a *reviewAPI) { a.rights["reader"] = nil }, ends: true},
		{name: "a token no longer accepted ends the stream", change: func(a *reviewAPI) { delete(a.users, "reader") }, ends: true},
		{name: "a review that fails ends the stream", change: func(a *reviewAPI) { a.fail = true }, ends: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newReviewAPI()
			clk := newFakeClock()
			sched := &statusScheduler{}
			s := NewServer(Options{Scheduler: sched, Engine: fakeEngine{}})
			defer s.Close()
			srv := httptest.NewServer(s.remoteHandler(&KubeAuthorizer{Post: api.post, Node: "node-a", Now: clk.Now}, clk))
			defer srv.Close()
			base, _ := url.Parse(srv.URL)
			c := NewRemoteClient(headerRT("Bearer reader"), base, false)
			defer c.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			notices, err := c.Notices(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// next is the stream's next notice; false when it ended.
			next := func() (engine.Notice, bool) {
				select {
				case n, ok := <-notices:
					return n, ok
				case <-time.After(30 * time.Second):
					t.Fatal("the stream neither sent nor ended")
				}
				return engine.Notice{}, false
			}
			// waiting waits until the stream waits for its decision to
			// expire.
			waiting := func(what string) {
				select {
				case <-clk.waiting:
				case <-time.After(30 * time.Second):
					t.Fatal("the stream does not wait for its decision to expire " + what)
				}
			}
			if _, ok := next(); !ok {
				t.Fatal("the stream ended before its first notice")
			}
			waiting("once open")
			api.mu.Lock()
			tc.change(api)
			api.mu.Unlock()
			clk.Step(cacheTTL)
			if !tc.ends {
				waiting("once authorized again")
				sched.publish(engine.Status{Passes: 7})
				if n, ok := next(); !ok || n.Status.Passes != 7 {
					t.Fatalf("after its decision was renewed the stream sent %+v (open %v), want the next notice", n, ok)
				}
				return
			}
			for {
				n, ok := next()
				if !ok {
					break
				}
				if n.Status.Passes != 0 {
					t.Errorf("the stream sent %+v after its right turned", n)
				}
			}
		})
	}
}

// headerRT sends requests with the given AuthorizationHeader.
type headerRT string

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(AuthorizationHeader, string(h))
	return http.DefaultTransport.RoundTrip(r)
}

// The agent's log names who sent each command: the reviewed user of a
// remote one, the uid and pid of a socket peer.
func TestCommandLogNamesSender(t *testing.T) {
	var mu sync.Mutex
	var buf strings.Builder
	log := slog.New(slog.NewJSONHandler(lockedWriter{&mu, &buf}, nil))
	s := NewServer(Options{Scheduler: &fakeScheduler{}, Engine: fakeEngine{}, Log: log})
	defer s.Close()
	ctx := t.Context()

	for _, tc := range []struct {
		name string
		// send sends a pause.
		send func(t *testing.T)
		want map[string]any
	}{
		{
			name: "a remote command names its reviewed user",
			send: func(t *testing.T) {
				srv := httptest.NewServer(s.RemoteHandler(&KubeAuthorizer{Post: newReviewAPI().post, Node: "node-a"}))
				defer srv.Close()
				base, _ := url.Parse(srv.URL)
				c := NewRemoteClient(headerRT("Bearer operator"), base, false)
				defer c.Close()
				if err := c.Pause(ctx, engine.Pause{}); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]any{"command": "/v1/pause", "user": "operator"},
		},
		{
			name: "a socket command names its peer's uid and pid",
			send: func(t *testing.T) {
				if os.Geteuid() != 0 {
					t.Skip("the client serves only a root peer: needs root")
				}
				path := SocketPath(t.TempDir())
				l, err := Listen(path)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				hs := HTTPServer(s.Handler())
				go hs.Serve(l)
				defer hs.Close()
				c := NewClient(path, false)
				defer c.Close()
				if err := c.Pause(ctx, engine.Pause{}); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]any{"command": "/v1/pause", "uid": float64(os.Getuid()), "pid": float64(os.Getpid())},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			buf.Reset()
			mu.Unlock()
			tc.send(t)
			mu.Lock()
			out := buf.String()
			mu.Unlock()
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var rec map[string]any
				if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "control command" {
					continue
				}
				for k, v := range tc.want {
					if rec[k] != v {
						t.Errorf("log line %s: %s is %v, want %v", line, k, rec[k], v)
					}
				}
				return
			}
			t.Errorf("no command line in the log:\n%s", out)
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
