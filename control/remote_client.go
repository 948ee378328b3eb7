package control

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// NewRemoteClient returns a client of an agent reached over HTTP at base,
// through rt: for `nodegc fleet`, base is the agent pod's proxy URL on the
// API server (…/namespaces/NS/pods/POD:PORT/proxy) and rt the user's
// kubeconfig transport, which also puts the user's bearer token in
// AuthorizationHeader (the API server drops Authorization before it
// proxies). The agent authorizes every request (RemoteHandler); one it
// answers 429, its reviews busy, is sent again as its Retry-After says
// (RetryAfter).
func NewRemoteClient(rt http.RoundTripper, base *url.URL, readOnly bool) *Client {
	return &Client{hc: &http.Client{Transport: &rebase{rt: RetryAfter(rt), base: base}}, readOnly: readOnly}
}

// rebase sends a request for http://agent/PATH to base/PATH.
type rebase struct {
	rt   http.RoundTripper
	base *url.URL
}

func (b *rebase) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	u := *b.base
	u.Path = strings.TrimSuffix(b.base.Path, "/") + r.URL.Path
	u.RawPath = ""
	u.RawQuery = r.URL.RawQuery
	r.URL, r.Host = &u, u.Host
	return b.rt.RoundTrip(r)
}

// RemoteProbeTimeout bounds the status call that opens a remote
// dashboard.
const RemoteProbeTimeout = 10 * time.Second
