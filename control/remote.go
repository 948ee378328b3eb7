package control

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"
)

// Remote access: the control protocol on the agent's TCP listener, for a
// dashboard that reaches the agent through the API server's pods proxy
// (`nodegc fleet`, `kubectl nodegc NODE`).
//
// The API server authenticates the user, checks get on pods/proxy, then
// deletes the Authorization header (apiserver's
// endpoints/filters/authentication.go) and forwards the rest of the
// request to the pod's IP over plain HTTP, or HTTPS without checking the
// certificate, with no client certificate (kube-apiserver's
// CreateProxyTransport). So the agent cannot tell a request the API
// server proxied from one sent straight to its port by anyone on the
// network, and it authorizes each request itself: the client sends its
// own bearer token in AuthorizationHeader, and the agent has the API
// server review it (TokenReview) and authorize the user
// (SubjectAccessReview) for a verb on this node:
//
//	group nodegc.io, resource nodes, name <node>:
//	  get     every GET of the protocol (status, snapshot, plan, notices)
//	  update  every command (force, preview, apply, pause, resume, stop)
//
// A request without a token, with one the API server rejects, or whose
// user lacks the verb is refused (401 or 403). A stream (GET /v1/notices)
// is authorized again each time its decision expires (cacheTTL after
// its token review) and ends when the answer is no longer yes.

// AuthorizationHeader carries "Bearer <token>", the client's own
// credential, to the agent through the pods proxy (which drops
// Authorization).
const AuthorizationHeader = "Nodegc-Authorization"

// Verbs the remote protocol authorizes, on nodegc.io/nodes/<node>.
const (
	VerbRead    = "get"
	VerbCommand = "update"
)

// Code of a request without a usable token.
const CodeUnauthenticated = "unauthenticated"

// Authorizer decides whether the holder of a bearer token may do verb on
// this node's agent: an error when the token is not valid
// (ErrUnauthenticated) or the review could not be made.
type Authorizer interface {
	Authorize(ctx context.Context, token, verb string) (Decision, error)
}

// Decision is an Authorizer's answer about a token and a verb.
type Decision struct {
	// User is the token's user, for the agent's log.
	User string
	// Allowed is whether the user may do the verb.
	Allowed bool
	// Until is when the answer must be asked again: a stream opened on it
	// is authorized again then, and closed if the answer turned. Zero is
	// cacheTTL from now.
	Until time.Time
}

// ErrUnauthenticated is a token the API server did not accept.
var ErrUnauthenticated = errors.New("the API server did not accept the token")

// streams are the requests whose reply goes on for as long as the client
// stays (GET /v1/notices): they are authorized again whenever their
// decision expires, and end when it no longer allows them.
var streams = map[string]bool{"/v1/notices": true}

// RemoteHandler serves the control protocol (under /v1/) to clients on
// the network, each request authorized by auth. Without auth (an agent
// with no API client) every request is refused.
func (s *Server) RemoteHandler(auth Authorizer) http.Handler {
	return s.remoteHandler(auth, realClock{})
}

// clock is the remote handler's time, a fake in tests.
type clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (s *Server) remoteHandler(auth Authorizer, clk clock) http.Handler {
	inner := s.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth == nil {
			writeError(w, http.StatusServiceUnavailable, CodeFailed, "this agent has no API client to authorize remote requests with (--pod-source off?)")
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get(AuthorizationHeader), "Bearer ")
		if !ok || token == "" {
			writeError(w, http.StatusUnauthorized, CodeUnauthenticated,
				"the agent needs your bearer token in the "+AuthorizationHeader+" header (your kubeconfig may authenticate with a client certificate, which the API server's proxy does not pass on)")
			return
		}
		verb := VerbRead
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			verb = VerbCommand
		}
		// The review slots are bounded by the address the request came
		// from: the API server's for a proxied request, the sender's for
		// one sent straight to the port. X-Forwarded-For is not used:
		// anyone may write it.
		ctx := withSource(r.Context(), sourceHost(r.RemoteAddr))
		d, err := auth.Authorize(ctx, token, verb)
		switch {
		case errors.Is(err, ErrUnauthenticated):
			writeError(w, http.StatusUnauthorized, CodeUnauthenticated, err.Error())
			return
		case errors.Is(err, ErrBusy):
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, CodeFailed, err.Error())
			return
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, CodeFailed, "authorize: "+err.Error())
			return
		case !d.Allowed:
			writeError(w, http.StatusForbidden, CodeForbidden, forbidden(d.User, verb))
			return
		}
		if verb == VerbRead && r.URL.Path == "/v1/status" {
			// Tell the client whether its commands would be accepted, so
			// its dashboard opens read-only when they would not.
			if c, err := auth.Authorize(ctx, token, VerbCommand); err != nil || !c.Allowed {
				r.Header.Set(ReadOnlyHeader, "true")
			}
		}
		ctx = withRemoteUser(ctx, d.User)
		if verb == VerbRead && streams[r.URL.Path] {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.keepAuthorized(ctx, cancel, clk, auth, token, verb, r.URL.Path, d)
			}()
			defer func() { cancel(); <-done }()
		}
		inner.ServeHTTP(w, r.WithContext(ctx))
	})
}

// keepAuthorized asks auth again each time d expires, while ctx lasts,
// and cancels the stream when the answer is no longer yes: the user lost
// the verb, the token is no longer accepted, or the review failed (the
// last answer has expired, so the stream fails closed).
func (s *Server) keepAuthorized(ctx context.Context, cancel context.CancelFunc, clk clock, auth Authorizer, token, verb, path string, d Decision) {
	user := d.User
	for {
		until := d.Until
		if until.IsZero() {
			until = clk.Now().Add(cacheTTL)
		}
		select {
		case <-ctx.Done():
			return
		case <-clk.After(until.Sub(clk.Now())):
		}
		var err error
		d, err = auth.Authorize(ctx, token, verb)
		if ctx.Err() != nil {
			return
		}
		if err != nil || !d.Allowed {
			why := "the user may no longer " + verb + " nodes.nodegc.io on this node"
			if err != nil {
				why = "authorize: " + err.Error()
			}
			s.o.Log.Info("remote stream closed", "user", user, "path", path, "reason", why)
			cancel()
			return
		}
	}
}

// sourceHost is the host of a request's remote address.
func sourceHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// CodeForbidden is a user without the verb.
const CodeForbidden = "forbidden"

func forbidden(user, verb string) string {
	return "user " + user + " may not " + verb + " nodes.nodegc.io on this node (RBAC: verb " + verb + ", apiGroups nodegc.io, resources nodes)"
}

// remoteUserKey is the context key of a remote request's reviewed user.
type remoteUserKey struct{}

func withRemoteUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, remoteUserKey{}, user)
}

// remoteUser is the user the API server reviewed for a remote request.
func remoteUser(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(remoteUserKey{}).(string)
	return u, ok
}
