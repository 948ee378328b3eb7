package cri

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInvalidEndpoint is wrapped by the errors for an endpoint nodegc cannot
// use (a scheme other than unix, an empty path): bad input, not an
// unreachable runtime.
var ErrInvalidEndpoint = errors.New("invalid runtime endpoint")

// Source names where Discover found the endpoint, for `nodegc plan` to
// print beside it.
type Source string

// Endpoint sources, in precedence order.
const (
	SourceFlag          Source = "--runtime-endpoint"
	SourceEnv           Source = "CONTAINER_RUNTIME_ENDPOINT"
	SourceKubeletConfig Source = "kubelet config containerRuntimeEndpoint"
	// SourceProbe is the first of the well-known sockets that answered.
	SourceProbe Source = "probe"
)

// DefaultEndpoints returns the sockets Discover tries, in order, when
// nothing names an endpoint: containerd, CRI-O, cri-dockerd and k3s.
func DefaultEndpoints() []string {
	return []string{
		"unix:///run/containerd/containerd.sock",
		"unix:///run/crio/crio.sock",
		"unix:///var/run/cri-dockerd.sock",
		"unix:///run/k3s/containerd/containerd.sock",
	}
}

// Normalize returns an endpoint in its canonical form "unix:///path". It
// accepts "unix:///path" and a bare path; other schemes (tcp, npipe) are
// an error wrapping ErrInvalidEndpoint.
func Normalize(endpoint string) (string, error) {
	p := endpoint
	if scheme, rest, ok := strings.Cut(endpoint, "://"); ok {
		if scheme != "unix" {
			return "", fmt.Errorf("%w %q: only unix sockets are supported", ErrInvalidEndpoint, endpoint)
		}
		p = rest
	}
	if p == "" {
		return "", fmt.Errorf("%w %q: empty socket path", ErrInvalidEndpoint, endpoint)
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%w %q: the socket path must be absolute", ErrInvalidEndpoint, endpoint)
	}
	return "unix://" + p, nil
}

// socketPath returns the path of a normalized endpoint.
func socketPath(endpoint string) string { return strings.TrimPrefix(endpoint, "unix://") }

// Discover finds the runtime endpoint as crictl and the kubelet do: the
// --runtime-endpoint flag (explicit), then the CONTAINER_RUNTIME_ENDPOINT
// environment value (env), then the kubelet config's
// containerRuntimeEndpoint (kubelet), then the first of DefaultEndpoints
// that answers a Version call. An empty argument is skipped. A named
// endpoint is returned without probing: Dial reports if it is down.
func Discover(ctx context.Context, explicit, env, kubelet string) (string, Source, error) {
	return DiscoverAmong(ctx, explicit, env, kubelet, DefaultEndpoints())
}

// DiscoverAmong is Discover with the probed candidates given, for tests.
// When no candidate answers, the error wraps engine.ErrUnavailable; when
// one refused for lack of permission, it says so.
func DiscoverAmong(ctx context.Context, explicit, env, kubelet string, candidates []string) (string, Source, error) {
	for _, named := range []struct {
		value  string
		source Source
	}{{explicit, SourceFlag}, {env, SourceEnv}, {kubelet, SourceKubeletConfig}} {
		if named.value == "" {
			continue
		}
		ep, err := Normalize(named.value)
		if err != nil {
			return "", named.source, fmt.Errorf("%s: %w", named.source, err)
		}
		return ep, named.source, nil
	}
	var denied error
	for _, cand := range candidates {
		ep, err := Normalize(cand)
		if err != nil {
			continue
		}
		c, err := Dial(ctx, ep, Options{ReadTimeout: 5 * time.Second})
		if err != nil {
			if errors.Is(err, ErrPermissionDenied) && denied == nil {
				denied = err
			}
			continue
		}
		c.Close()
		return ep, SourceProbe, nil
	}
	if denied != nil {
		return "", SourceProbe, denied
	}
	return "", SourceProbe, fmt.Errorf("%w: no CRI runtime answers at %s; name one with --runtime-endpoint",
		errUnavailable, strings.Join(candidates, ", "))
}
