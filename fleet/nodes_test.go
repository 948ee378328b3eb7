package fleet

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// tableRow is a Node's row of the API server's table, its columns as
// pkg/printers lays them out (NAME, STATUS, ROLES, AGE, VERSION).
func tableRow(name, rv, status string) string {
	return fmt.Sprintf(`{"cells":[%q,%q,"<none>","1d","v1.36.3"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":%q,"resourceVersion":%q}}}`,
		name, status, name, rv)
}

const columnDefs = `"columnDefinitions":[{"name":"Name","type":"string"},{"name":"Status","type":"string"},{"name":"Roles","type":"string"},{"name":"Age","type":"string"},{"name":"Version","type":"string"}]`

// The Nodes are read as table rows: the list's and the watch's rows
// become nodeMeta with the STATUS column as Ready, the watch's events
// after its first without column definitions as the API server sends
// them; the requests ask for the table.
func TestNodesAsTableRows(t *testing.T) {
	accepts := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accepts <- r.Header.Get("Accept") + " " + r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json;as=Table;g=meta.k8s.io;v=v1")
		if r.URL.Query().Get("watch") != "true" {
			fmt.Fprintf(w, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"10"},%s,"rows":[%s,%s]}`,
				columnDefs, tableRow("n1", "5", "Ready"), tableRow("n2", "6", "NotReady,SchedulingDisabled"))
			return
		}
		fmt.Fprintf(w, `{"type":"MODIFIED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1",%s,"rows":[%s]}}`+"\n", columnDefs, tableRow("n1", "11", "NotReady"))
		fmt.Fprintf(w, `{"type":"MODIFIED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","rows":[%s]}}`+"\n", tableRow("n2", "12", "Unknown"))
	}))
	defer srv.Close()
	c, err := newNodesClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obj, err := c.list(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := obj.(*nodeList)
	if l.ResourceVersion != "10" || len(l.Items) != 2 || l.Items[0].Name != "n1" || l.Items[0].Ready != "Ready" || l.Items[0].ResourceVersion != "5" ||
		l.Items[1].Ready != "NotReady,SchedulingDisabled" {
		t.Errorf("list %+v", l)
	}
	if a := <-accepts; !strings.HasPrefix(a, tableAccept+" ") || !strings.Contains(a, "includeObject=Metadata") {
		t.Errorf("list request: %s", a)
	}
	w, err := c.watch(ctx, metav1.ListOptions{ResourceVersion: "10"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range []nodeMeta{{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "11"}, Ready: "NotReady"},
		{ObjectMeta: metav1.ObjectMeta{Name: "n2", ResourceVersion: "12"}, Ready: "Unknown"}} {
		ev := <-w.ResultChan()
		n, ok := ev.Object.(*nodeMeta)
		if ev.Type != watch.Modified || !ok || n.Name != want.Name || n.ResourceVersion != want.ResourceVersion || n.Ready != want.Ready {
			t.Errorf("event %v %#v, want %+v", ev.Type, ev.Object, want)
		}
	}
	if a := <-accepts; !strings.Contains(a, "watch=true") || strings.Contains(a, "allowWatchBookmarks=true") {
		t.Errorf("watch request: %s", a)
	}
}

func TestNotReady(t *testing.T) {
	for ready, want := range map[string]bool{"Ready": false, "Ready,SchedulingDisabled": false, "": false,
		"NotReady": true, "Unknown": true, "NotReady,SchedulingDisabled": true} {
		if got := (Node{Ready: ready}).NotReady(); got != want {
			t.Errorf("%q: NotReady %v, want %v", ready, got, want)
		}
	}
}
