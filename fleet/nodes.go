package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// tableAccept asks the API server for a list or watch of Nodes as its
// table of them, kubectl's `get nodes`: each row the Node's metadata and
// its columns, of which STATUS is the Ready condition. A Node itself is
// tens of KB (its images, every condition); its row is its metadata and
// a few words, what the metadata-only read cost before, and the API
// server's watch cache prints it without a read of etcd.
const tableAccept = "application/json;as=Table;g=meta.k8s.io;v=v1"

// statusColumn is the Node table's column of the Ready condition
// (pkg/printers/internalversion: Ready, NotReady or Unknown, and
// ",SchedulingDisabled" when cordoned).
const statusColumn = "Status"

// nodesClient lists and watches the Nodes as table rows.
type nodesClient struct {
	rc *rest.RESTClient
	// status is the STATUS column's index: a watch's events after its
	// first carry no column definitions (the API server sends them once).
	status *atomic.Int32
}

// newNodesClient is a client of the Nodes' table.
func newNodesClient(cfg *rest.Config) (nodesClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Version: "v1"}
	c.APIPath = "/api"
	c.NegotiatedSerializer = metainternalversionscheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nodesClient{}, fmt.Errorf("API client for nodes: %w", err)
	}
	col := &atomic.Int32{}
	col.Store(1) // the table's own order: NAME, STATUS, ROLES, AGE, VERSION
	return nodesClient{rc: rc, status: col}, nil
}

// request is a GET of the Nodes' table with opts.
func (c nodesClient) request(opts metav1.ListOptions) *rest.Request {
	return c.rc.Get().Resource(NodesResource.Resource).SetHeader("Accept", tableAccept).
		VersionedParams(&opts, metav1.ParameterCodec).Param("includeObject", string(metav1.IncludeMetadata))
}

// list lists the Nodes opts selects, one nodeMeta a row.
func (c nodesClient) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	t := &metav1.Table{}
	if err := c.request(opts).Do(ctx).Into(t); err != nil {
		return nil, err
	}
	l := &nodeList{ListMeta: t.ListMeta}
	c.columns(t)
	for i := range t.Rows {
		n, err := c.node(&t.Rows[i])
		if err != nil {
			return nil, err
		}
		l.Items = append(l.Items, *n)
	}
	return l, nil
}

// watch watches the Nodes opts selects, each event's table row a
// nodeMeta. Bookmarks are not asked for: a table has no object for one.
func (c nodesClient) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch, opts.AllowWatchBookmarks = true, false
	w, err := c.request(opts).Watch(ctx)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		t, ok := ev.Object.(*metav1.Table)
		if !ok {
			return ev, true // an error's Status
		}
		c.columns(t)
		if len(t.Rows) != 1 {
			return watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure,
				Message: fmt.Sprintf("a watch event of nodes with %d table rows, not one", len(t.Rows))}}, true
		}
		n, err := c.node(&t.Rows[0])
		if err != nil {
			return watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}}, true
		}
		ev.Object = n
		return ev, true
	}), nil
}

// columns notes where t's STATUS column is, if t says.
func (c nodesClient) columns(t *metav1.Table) {
	if i := slices.IndexFunc(t.ColumnDefinitions, func(d metav1.TableColumnDefinition) bool { return d.Name == statusColumn }); i >= 0 {
		c.status.Store(int32(i))
	}
}

// node is a table row's Node: its name and version from the row's
// metadata, and its Ready condition from the STATUS cell.
func (c nodesClient) node(row *metav1.TableRow) (*nodeMeta, error) {
	var m metav1.PartialObjectMetadata
	if err := json.Unmarshal(row.Object.Raw, &m); err != nil || m.Name == "" {
		return nil, fmt.Errorf("a Node's table row without its metadata: %v", err)
	}
	n := &nodeMeta{ObjectMeta: metav1.ObjectMeta{Name: m.Name, ResourceVersion: m.ResourceVersion}}
	if i := int(c.status.Load()); i < len(row.Cells) {
		n.Ready, _ = row.Cells[i].(string)
	}
	return n, nil
}

// nodeMeta is what the fleet keeps of a Node: its name, its version and
// its Ready condition.
type nodeMeta struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// Ready is the table's STATUS: Ready, NotReady or Unknown, with
	// ",SchedulingDisabled" when cordoned.
	Ready string
}

// DeepCopyObject returns a copy (runtime.Object).
func (n *nodeMeta) DeepCopyObject() runtime.Object {
	c := *n
	c.ObjectMeta = *n.ObjectMeta.DeepCopy()
	return &c
}

// GetObjectKind returns the object's kind.
func (n *nodeMeta) GetObjectKind() schema.ObjectKind { return &n.TypeMeta }

// nodeList is a list of nodeMeta, as the reflector takes a list.
type nodeList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []nodeMeta
}

// DeepCopyObject returns a copy (runtime.Object).
func (l *nodeList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = slices.Clone(l.Items)
	return &c
}

// GetObjectKind returns the list's kind.
func (l *nodeList) GetObjectKind() schema.ObjectKind { return &l.TypeMeta }

// notReady reports whether a Ready column says the node is not ready
// (NotReady, Unknown); "" (not known) is not.
func notReady(ready string) bool {
	r, _, _ := strings.Cut(ready, ",")
	return r != "" && r != "Ready"
}
