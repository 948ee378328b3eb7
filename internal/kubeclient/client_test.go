package kubeclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// request is what the fake API server saw.
type request struct {
	method, path, query, contentType, body string
}

// fakeAPI serves canned answers by path and records each request.
func fakeAPI(t *testing.T, answer func(w http.ResponseWriter, body []byte)) (*Client, <-chan request) {
	t.Helper()
	seen := make(chan request, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen <- request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), string(body)}
		answer(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c, seen
}

func TestListPods(t *testing.T) {
	c, seen := fakeAPI(t, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},
			"items":[{"metadata":{"name":"web-1","namespace":"default","uid":"u1"},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}]}`)
	})
	timeout := int64(30)
	l, err := c.Pods().List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=n1", ResourceVersion: "0", TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].UID != "u1" || l.Items[0].Spec.NodeName != "n1" || l.Items[0].Status.Phase != corev1.PodRunning || l.ResourceVersion != "7" {
		t.Errorf("list = %+v", l)
	}
	r := <-seen
	if want := (request{method: "GET", path: "/api/v1/pods", query: "fieldSelector=spec.nodeName%3Dn1&resourceVersion=0&timeout=30s&timeoutSeconds=30"}); r.method != want.method || r.path != want.path || r.query != want.query {
		t.Errorf("request = %s %s?%s, want %s %s?%s", r.method, r.path, r.query, want.method, want.path, want.query)
	}
}

func TestWatchPods(t *testing.T) {
	c, seen := fakeAPI(t, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-1","namespace":"default","uid":"u1","resourceVersion":"8"}}}`+"\n")
	})
	w, err := c.Pods().Watch(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=n1", ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		p, ok := ev.Object.(*corev1.Pod)
		if ev.Type != watch.Deleted || !ok || p.UID != "u1" || p.ResourceVersion != "8" {
			t.Errorf("event = %v %#v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	if r := <-seen; r.path != "/api/v1/pods" || r.query != "fieldSelector=spec.nodeName%3Dn1&resourceVersion=7&watch=true" {
		t.Errorf("request = %s %s?%s", r.method, r.path, r.query)
	}
}

func TestCreateEvent(t *testing.T) {
	c, seen := fakeAPI(t, func(w http.ResponseWriter, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "n1.1", Namespace: "default"},
		EventTime:           metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		ReportingController: "nodegc", ReportingInstance: "nodegc-n1",
		Action: "ImageGC", Reason: "FreeDiskSpaceFailed", Type: corev1.EventTypeWarning, Note: "insufficient",
		Regarding: corev1.ObjectReference{Kind: "Node", Name: "n1", UID: "n1", APIVersion: "v1"},
	}
	if _, err := c.CreateEvent(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	r := <-seen
	if r.method != "POST" || r.path != "/apis/events.k8s.io/v1/namespaces/default/events" || r.contentType != "application/json" {
		t.Errorf("request = %s %s (%s)", r.method, r.path, r.contentType)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if got["apiVersion"] != "events.k8s.io/v1" || got["kind"] != "Event" || got["reason"] != "FreeDiskSpaceFailed" || got["reportingController"] != "nodegc" {
		t.Errorf("body = %s", r.body)
	}
}

func TestCreateEventError(t *testing.T) {
	c, _ := fakeAPI(t, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"events.events.k8s.io is forbidden","reason":"Forbidden","code":403}`)
	})
	_, err := c.CreateEvent(context.Background(), &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}})
	if err == nil || err.Error() != "events.events.k8s.io is forbidden" {
		t.Errorf("err = %v, want the API server's message", err)
	}
}
