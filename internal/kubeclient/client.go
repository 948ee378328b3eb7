package kubeclient

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// scheme holds core/v1 and events.k8s.io/v1 (each with meta/v1's list
// and watch options), all the types nodegc sends or reads.
var (
	scheme         = runtime.NewScheme()
	codecs         = serializer.NewCodecFactory(scheme)
	parameterCodec = runtime.NewParameterCodec(scheme)
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, eventsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err) // only on a programming error in the generated code
		}
	}
}

// Pods lists and watches pods: the part of client-go's typed
// PodInterface the pod source uses (client-go's fake clientset's
// CoreV1().Pods("") satisfies it too).
type Pods interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Client talks to one API server.
type Client struct {
	core   rest.Interface
	events rest.Interface
	// dynamic reads and writes the NodeGC objects (nodegc.go).
	dynamic dynamic.Interface
}

// New returns a client for the API server cfg names. cfg is not
// changed.
func New(cfg *rest.Config) (*Client, error) {
	core, err := restClient(cfg, corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	events, err := restClient(cfg, eventsv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic API client: %w", err)
	}
	return &Client{core: core, events: events, dynamic: dyn}, nil
}

// restClient is what client-go's typed clients build for their group
// (setConfigDefaults), on this package's scheme.
func restClient(cfg *rest.Config, gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = apiPath
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, codecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("API client for %s: %w", gv, err)
	}
	return rc, nil
}

// Pods returns the pods of every namespace.
func (c *Client) Pods() Pods { return pods{c.core} }

// pods is client-go's typed pods client (kubernetes/typed/core/v1),
// for all namespaces, list and watch only.
type pods struct{ c rest.Interface }

// List lists the pods opts selects.
func (p pods) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := p.c.Get().Resource("pods").VersionedParams(&opts, parameterCodec).Timeout(timeout(opts)).Do(ctx).Into(out)
	return out, err
}

// Watch watches the pods opts selects.
func (p pods) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return p.c.Get().Resource("pods").VersionedParams(&opts, parameterCodec).Timeout(timeout(opts)).Watch(ctx)
}

// timeout is the request timeout opts asks for; 0 for none.
func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// CreateEvent creates ev (events.k8s.io/v1) in its namespace.
func (c *Client) CreateEvent(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	out := &eventsv1.Event{}
	err := c.events.Post().Namespace(ev.Namespace).Resource("events").Body(ev).Do(ctx).Into(out)
	return out, err
}

// PatchEvent applies a strategic merge patch to the event
// (events.k8s.io/v1) of that namespace and name: how client-go's events
// recorder counts a repeat on the event's series.
func (c *Client) PatchEvent(ctx context.Context, namespace, name string, patch []byte) (*eventsv1.Event, error) {
	out := &eventsv1.Event{}
	err := c.events.Patch(types.StrategicMergePatchType).Namespace(namespace).Resource("events").Name(name).Body(patch).Do(ctx).Into(out)
	return out, err
}
