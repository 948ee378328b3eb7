// Package readcount counts the bytes an HTTP client reads of the replies
// it gets, so that a test can show a reply was read no further than its
// bound.
package readcount

import (
	"io"
	"net/http"
	"sync/atomic"
)

// Transport is RT, adding to N every byte read of a reply's body.
type Transport struct {
	RT http.RoundTripper
	N  *atomic.Int64
}

// RoundTrip sends r through RT and counts what is read of the reply.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.RT.RoundTrip(r)
	if err == nil {
		resp.Body = &body{resp.Body, t.N}
	}
	return resp, err
}

type body struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
