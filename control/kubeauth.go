package control

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Post sends a JSON body to an API server path (with the agent's own
// credentials) and returns the reply's body.
type Post func(ctx context.Context, path string, body []byte) ([]byte, error)

// KubeAuthorizer is the Authorizer of an agent in a cluster: a
// TokenReview of the client's token, then a SubjectAccessReview of its
// user for the verb on nodegc.io/nodes/<Node>, as kube-rbac-proxy and the
// kubelet's webhook authorization do. The agent's ServiceAccount needs
// create on tokenreviews and subjectaccessreviews (deploy/rbac.yaml).
//
// A decision is kept for cacheTTL from its token review, keyed by the
// token's hash, so a dashboard's requests cost the API server a token
// review and a review a verb every cacheTTL, not two a request, and a
// revoked token or right stops working within cacheTTL. Concurrent
// requests for the same token and verb share one review.
//
// Anyone who reaches the port can make the agent ask the API server
// about a token, so the reviews in flight are bounded, and fairly: a
// token the API server accepted within knownFor is reviewed in slots of
// its own (maxKnownReviews), which tokens it never accepted cannot take;
// those share maxReviews slots, at most maxSourceReviews of them for one
// source address. A request beyond them is refused (ErrBusy, which the
// remote handler answers 429 with Retry-After) rather than queued.
// Likewise the cache keeps the decisions of accepted tokens apart from
// the tokens it rejected, so a flood of made-up tokens evicts only
// others of its kind.
type KubeAuthorizer struct {
	Post Post
	Node string
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu sync.Mutex
	// decisions are the accepted tokens' answers, by token and verb.
	decisions map[decisionKey]decision
	// users are the tokens the API server accepted: who, and when.
	users map[tokenKey]reviewedUser
	// rejected are the tokens it did not accept, until when that is kept.
	rejected map[tokenKey]time.Time
	// Reviews in flight: of known tokens, of the others, and of the
	// others by source address.
	knownReviews, unknownReviews int
	sourceReviews                map[string]int
	flight                       singleflight.Group
}

// Bounds of the reviews in flight (see KubeAuthorizer).
const (
	// maxReviews bounds the reviews of tokens the API server has not
	// accepted within knownFor: anyone can send one.
	maxReviews = 4
	// maxSourceReviews bounds those of one source address, so one sender
	// cannot hold them all.
	maxSourceReviews = maxReviews / 2
	// maxKnownReviews bounds the reviews of tokens it accepted.
	maxKnownReviews = 4
	// knownFor is how long an accepted token keeps its slots.
	knownFor = time.Hour
	// reviewTimeout bounds one review, which runs on when the request
	// that started it goes, for the others waiting on it.
	reviewTimeout = 10 * time.Second
)

// ErrBusy is a request refused because the reviews it may use are all in
// flight.
var ErrBusy = errors.New("too many authorization reviews in flight; try again")

// cacheTTL is how long a decision is reused from its token review;
// cacheMax bounds each of the cache's maps.
const (
	cacheTTL = 10 * time.Second
	cacheMax = 1024
)

type (
	tokenKey    [sha256.Size]byte
	decisionKey struct {
		token tokenKey
		verb  string
	}
	decision struct {
		user    string
		allowed bool
		until   time.Time
	}
	reviewedUser struct {
		name, uid string
		groups    []string
		extra     map[string][]string
		// at is when its token review was sent.
		at time.Time
	}
)

// sourceKey is the context key of a request's source address.
type sourceKey struct{}

// withSource returns ctx naming the address a request came from, which
// KubeAuthorizer bounds the reviews of.
func withSource(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, sourceKey{}, addr)
}

func sourceOf(ctx context.Context) string {
	s, _ := ctx.Value(sourceKey{}).(string)
	return s
}

// The reviews on the wire (authentication.k8s.io/v1 and
// authorization.k8s.io/v1), only the fields used: nodegc links no more
// API groups than core and events (see internal/kubeclient).
type tokenReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Token string `json:"token"`
	} `json:"spec"`
	Status struct {
		Authenticated bool `json:"authenticated"`
		User          struct {
			Username string              `json:"username"`
			UID      string              `json:"uid"`
			Groups   []string            `json:"groups"`
			Extra    map[string][]string `json:"extra"`
		} `json:"user"`
		Error string `json:"error"`
	} `json:"status"`
}

type accessReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		ResourceAttributes struct {
			Verb     string `json:"verb"`
			Group    string `json:"group"`
			Resource string `json:"resource"`
			Name     string `json:"name"`
		} `json:"resourceAttributes"`
		User   string              `json:"user"`
		UID    string              `json:"uid,omitempty"`
		Groups []string            `json:"groups,omitempty"`
		Extra  map[string][]string `json:"extra,omitempty"`
	} `json:"spec"`
	Status struct {
		Allowed bool   `json:"allowed"`
		Reason  string `json:"reason"`
	} `json:"status"`
}

// Authorize reviews the token, then the user's verb on this node, or
// answers from the cache.
func (a *KubeAuthorizer) Authorize(ctx context.Context, token, verb string) (Decision, error) {
	key := decisionKey{token: sha256.Sum256([]byte(token)), verb: verb}
	a.mu.Lock()
	d, err, ok := a.cached(key, a.now())
	a.mu.Unlock()
	if ok {
		return d, err
	}
	ch := a.flight.DoChan(string(key.token[:])+"\x00"+verb, func() (any, error) {
		return a.review(ctx, token, key)
	})
	select {
	case r := <-ch:
		d, _ := r.Val.(Decision)
		return d, r.Err
	case <-ctx.Done():
		return Decision{}, ctx.Err()
	}
}

func (a *KubeAuthorizer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// cached answers from the cache at now; a.mu is held.
func (a *KubeAuthorizer) cached(key decisionKey, now time.Time) (Decision, error, bool) {
	if until, ok := a.rejected[key.token]; ok && now.Before(until) {
		return Decision{Until: until}, ErrUnauthenticated, true
	}
	if d, ok := a.decisions[key]; ok && now.Before(d.until) {
		return Decision{User: d.user, Allowed: d.allowed, Until: d.until}, nil, true
	}
	return Decision{}, nil, false
}

// review asks the API server, in a slot of the token's kind, and keeps
// the answer.
func (a *KubeAuthorizer) review(ctx context.Context, token string, key decisionKey) (Decision, error) {
	a.mu.Lock()
	now := a.now()
	if d, err, ok := a.cached(key, now); ok {
		a.mu.Unlock()
		return d, err
	}
	u, known := a.users[key.token]
	known = known && now.Sub(u.at) < knownFor
	release, err := a.acquire(known, sourceOf(ctx))
	a.mu.Unlock()
	if err != nil {
		return Decision{}, err
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reviewTimeout)
	defer cancel()

	if !known || !now.Before(u.at.Add(cacheTTL)) {
		tr := tokenReview{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"}
		tr.Spec.Token = token
		if err := a.call(ctx, "/apis/authentication.k8s.io/v1/tokenreviews", &tr); err != nil {
			return Decision{}, fmt.Errorf("token review: %w", err)
		}
		if !tr.Status.Authenticated || tr.Status.User.Username == "" {
			until := now.Add(cacheTTL)
			a.reject(key.token, until)
			return Decision{Until: until}, ErrUnauthenticated
		}
		s := tr.Status.User
		u = reviewedUser{name: s.Username, uid: s.UID, groups: s.Groups, extra: s.Extra, at: now}
		a.accept(key.token, u)
	}
	ar := accessReview{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"}
	ar.Spec.ResourceAttributes.Verb = key.verb
	ar.Spec.ResourceAttributes.Group = "nodegc.io"
	ar.Spec.ResourceAttributes.Resource = "nodes"
	ar.Spec.ResourceAttributes.Name = a.Node
	ar.Spec.User, ar.Spec.UID, ar.Spec.Groups, ar.Spec.Extra = u.name, u.uid, u.groups, u.extra
	if err := a.call(ctx, "/apis/authorization.k8s.io/v1/subjectaccessreviews", &ar); err != nil {
		return Decision{User: u.name}, fmt.Errorf("access review: %w", err)
	}
	// The decision is as old as the token review it rests on.
	d := decision{user: u.name, allowed: ar.Status.Allowed, until: u.at.Add(cacheTTL)}
	a.decide(key, d)
	return Decision{User: d.user, Allowed: d.allowed, Until: d.until}, nil
}

// acquire takes a review slot for a known token or, for another, one of
// the others' slots that src may take; a.mu is held. It returns the slot's
// release.
func (a *KubeAuthorizer) acquire(known bool, src string) (func(), error) {
	if known {
		if a.knownReviews >= maxKnownReviews {
			return nil, ErrBusy
		}
		a.knownReviews++
		return func() {
			a.mu.Lock()
			a.knownReviews--
			a.mu.Unlock()
		}, nil
	}
	if a.unknownReviews >= maxReviews || a.sourceReviews[src] >= maxSourceReviews {
		return nil, ErrBusy
	}
	if a.sourceReviews == nil {
		a.sourceReviews = map[string]int{}
	}
	a.unknownReviews++
	a.sourceReviews[src]++
	return func() {
		a.mu.Lock()
		a.unknownReviews--
		if a.sourceReviews[src]--; a.sourceReviews[src] == 0 {
			delete(a.sourceReviews, src)
		}
		a.mu.Unlock()
	}, nil
}

// reject keeps a token the API server did not accept until until, and
// forgets what it knew of it.
func (a *KubeAuthorizer) reject(t tokenKey, until time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.users, t)
	delete(a.decisions, decisionKey{t, VerbRead})
	delete(a.decisions, decisionKey{t, VerbCommand})
	if a.rejected == nil {
		a.rejected = map[tokenKey]time.Time{}
	}
	makeRoom(a.rejected, a.now(), func(until time.Time) time.Time { return until })
	a.rejected[t] = until
}

// accept keeps a token the API server accepted.
func (a *KubeAuthorizer) accept(t tokenKey, u reviewedUser) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.rejected, t)
	if a.users == nil {
		a.users = map[tokenKey]reviewedUser{}
	}
	makeRoom(a.users, a.now(), func(u reviewedUser) time.Time { return u.at.Add(knownFor) })
	a.users[t] = u
}

// decide keeps an accepted token's decision.
func (a *KubeAuthorizer) decide(k decisionKey, d decision) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.decisions == nil {
		a.decisions = map[decisionKey]decision{}
	}
	makeRoom(a.decisions, a.now(), func(d decision) time.Time { return d.until })
	a.decisions[k] = d
}

// makeRoom makes room for one more entry in m when it holds cacheMax:
// it deletes the entries expired at now, and if none had, the one that
// expires first.
func makeRoom[K comparable, V any](m map[K]V, now time.Time, expires func(V) time.Time) {
	if len(m) < cacheMax {
		return
	}
	var first K
	var firstAt time.Time
	for k, v := range m {
		at := expires(v)
		if !now.Before(at) {
			delete(m, k)
		} else if firstAt.IsZero() || at.Before(firstAt) {
			first, firstAt = k, at
		}
	}
	if len(m) >= cacheMax {
		delete(m, first)
	}
}

// call posts v and decodes the reply into v.
func (a *KubeAuthorizer) call(ctx context.Context, path string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	out, err := a.Post(ctx, path, body)
	if err != nil {
		return err
	}
	return json.Unmarshal(out, v)
}
