package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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
func (f *fakeScheduler) Pause()     {}
func (f *fakeScheduler) Resume()    {}
func (f *fakeScheduler) Stop() bool { return false }
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
			st, err := c.Status(ctx)
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
	forged.Status(ctx)
	n := api.reviews.Load()
	if _, err := forged.Status(ctx); code(err) != 401 {
		t.Errorf("forged token again: %v, want 401", err)
	}
	c := NewRemoteClient(withToken("operator"), base, false)
	defer c.Close()
	if _, err := c.Status(ctx); err != nil {
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
	if _, err := c.Status(t.Context()); code(err) != http.StatusServiceUnavailable {
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
