package control

import (
	"context"
	"errors"
	"net/http"
	"strings"
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
// user lacks the verb is refused (401 or 403).

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
// this node's agent. It returns the user's name (for the agent's log)
// and whether the verb is allowed; an error when the token is not valid
// or the review could not be made.
type Authorizer interface {
	Authorize(ctx context.Context, token, verb string) (user string, allowed bool, err error)
}

// ErrUnauthenticated is a token the API server did not accept.
var ErrUnauthenticated = errors.New("the API server did not accept the token")

// RemoteHandler serves the control protocol (under /v1/) to clients on
// the network, each request authorized by auth. Without auth (an agent
// with no API client) every request is refused.
func (s *Server) RemoteHandler(auth Authorizer) http.Handler {
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
		user, allowed, err := auth.Authorize(r.Context(), token, verb)
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
		case !allowed:
			writeError(w, http.StatusForbidden, CodeForbidden, forbidden(user, verb))
			return
		}
		if verb == VerbRead && r.URL.Path == "/v1/status" {
			// Tell the client whether its commands would be accepted, so
			// its dashboard opens read-only when they would not.
			if _, may, err := auth.Authorize(r.Context(), token, VerbCommand); err != nil || !may {
				r.Header.Set(ReadOnlyHeader, "true")
			}
		}
		inner.ServeHTTP(w, r)
	})
}

// CodeForbidden is a user without the verb.
const CodeForbidden = "forbidden"

func forbidden(user, verb string) string {
	return "user " + user + " may not " + verb + " nodes.nodegc.io on this node (RBAC: verb " + verb + ", apiGroups nodegc.io, resources nodes)"
}
