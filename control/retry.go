package control

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Bounds of RetryAfter: how many times a request is sent again, and the
// longest Retry-After it waits for (a longer one is the client's 429).
const (
	maxRetries   = 3
	maxRetryWait = 10 * time.Second
)

// RetryAfter returns rt sending a request again when the reply is 429
// Too Many Requests with a Retry-After of at most maxRetryWait, after
// waiting as long as it says, up to maxRetries times. A 429 means the
// request was not acted on: the agent answers it before anything else
// when its authorization reviews are all in flight (RemoteHandler), and
// the API server when its priority and fairness queues are full. So a
// command is sent again too, provided its body can be (the request has
// GetBody, as http.NewRequest gives a bytes.Reader's); otherwise, or
// past the bounds, or without a Retry-After, the 429 is the reply.
func RetryAfter(rt http.RoundTripper) http.RoundTripper {
	return &retryAfter{rt: rt, wait: wait}
}

type retryAfter struct {
	rt http.RoundTripper
	// wait waits d or until ctx ends; a fake in tests.
	wait func(ctx context.Context, d time.Duration) error
}

func (t *retryAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := t.rt.RoundTrip(r)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || attempt == maxRetries {
			return resp, err
		}
		d, ok := retryDelay(resp.Header.Get("Retry-After"), time.Now())
		if !ok || d > maxRetryWait {
			return resp, nil
		}
		next, ok := rewind(r)
		if !ok {
			return resp, nil
		}
		// Read a little of the refusal, so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		if err := t.wait(r.Context(), d); err != nil {
			return nil, err
		}
		r = next
	}
}

// rewind returns r ready to be sent again, with its body from GetBody;
// false when its body cannot be sent again.
func rewind(r *http.Request) (*http.Request, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return r, true
	}
	if r.GetBody == nil {
		return nil, false
	}
	body, err := r.GetBody()
	if err != nil {
		return nil, false
	}
	next := r.Clone(r.Context())
	next.Body = body
	return next, true
}

// retryDelay is how long a Retry-After value says to wait at now: a
// number of seconds or an HTTP date (RFC 9110, section 10.2.3).
func retryDelay(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}

// wait waits d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
