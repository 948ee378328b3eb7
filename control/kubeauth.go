package control

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Post sends a JSON body to an API server path (with the agent's own
// credentials) and returns the reply's body.
type Post func(ctx context.Context, path string, body []byte) ([]byte, error)

// KubeAuthorizer is the Authorizer of an agent in a cluster: a
// TokenReview of the client's token, then a SubjectAccessReview of its
// user for the verb on nodegc.io/nodes/<Node>, as kube-rbac-proxy and the
// kubelet's webhook authorization do. The agent's ServiceAccount needs
// create on tokenreviews and subjectaccessreviews (deploy/rbac.yaml).
// Decisions are kept for cacheTTL, keyed by the token's hash, so a
// dashboard's requests cost the API server two reviews a verb every
// cacheTTL, not two a request.
type KubeAuthorizer struct {
	Post Post
	Node string
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu    sync.Mutex
	cache map[[sha256.Size + 1]byte]decision
	// inFlight bounds the reviews sent at once: anyone who reaches the
	// port can make the agent ask the API server about a token.
	inFlight chan struct{}
	once     sync.Once
}

// maxReviews is how many reviews an agent sends at once; a request
// beyond them is refused (ErrBusy) rather than queued.
const maxReviews = 4

// ErrBusy is a request refused because maxReviews are in flight.
var ErrBusy = errors.New("too many authorization reviews in flight; try again")

type decision struct {
	user    string
	allowed bool
	until   time.Time
}

// cacheTTL is how long a decision is reused; cacheMax bounds the cache.
const (
	cacheTTL = 10 * time.Second
	cacheMax = 1024
)

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

// Authorize reviews the token, then the user's verb on this node.
func (a *KubeAuthorizer) Authorize(ctx context.Context, token, verb string) (string, bool, error) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	var key [sha256.Size + 1]byte
	sum := sha256.Sum256([]byte(token))
	copy(key[:], sum[:])
	if verb == VerbCommand {
		key[sha256.Size] = 1
	}
	a.mu.Lock()
	if d, ok := a.cache[key]; ok && now().Before(d.until) {
		a.mu.Unlock()
		if d.user == "" {
			return "", false, ErrUnauthenticated
		}
		return d.user, d.allowed, nil
	}
	a.mu.Unlock()
	a.once.Do(func() { a.inFlight = make(chan struct{}, maxReviews) })
	select {
	case a.inFlight <- struct{}{}:
		defer func() { <-a.inFlight }()
	default:
		return "", false, ErrBusy
	}

	tr := tokenReview{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"}
	tr.Spec.Token = token
	if err := a.call(ctx, "/apis/authentication.k8s.io/v1/tokenreviews", &tr); err != nil {
		return "", false, fmt.Errorf("token review: %w", err)
	}
	if !tr.Status.Authenticated || tr.Status.User.Username == "" {
		a.remember(key, decision{until: now().Add(cacheTTL)})
		return "", false, ErrUnauthenticated
	}
	u := tr.Status.User
	ar := accessReview{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"}
	ar.Spec.ResourceAttributes.Verb = verb
	ar.Spec.ResourceAttributes.Group = "nodegc.io"
	ar.Spec.ResourceAttributes.Resource = "nodes"
	ar.Spec.ResourceAttributes.Name = a.Node
	ar.Spec.User, ar.Spec.UID, ar.Spec.Groups, ar.Spec.Extra = u.Username, u.UID, u.Groups, u.Extra
	if err := a.call(ctx, "/apis/authorization.k8s.io/v1/subjectaccessreviews", &ar); err != nil {
		return u.Username, false, fmt.Errorf("access review: %w", err)
	}
	a.remember(key, decision{user: u.Username, allowed: ar.Status.Allowed, until: now().Add(cacheTTL)})
	return u.Username, ar.Status.Allowed, nil
}

// remember keeps a decision (one without a user: a token the API server
// rejected).
func (a *KubeAuthorizer) remember(key [sha256.Size + 1]byte, d decision) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cache == nil || len(a.cache) >= cacheMax {
		a.cache = map[[sha256.Size + 1]byte]decision{}
	}
	a.cache[key] = d
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
