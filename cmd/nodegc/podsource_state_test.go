package main

import (
	"bytes"
	"github.com/nodegc/nodegc/internal/proctest"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/engine"
)

// TestPodSourceInconsistentWarnsAndSays: an API server that lists none of
// the pods running here (a wrong --node-name) makes every pass's pod
// source not ready, with the reason and the node asked about in its
// description (the plan's and the dashboard's "Pods:" line), and prints
// one warning however many passes ask. Stopping the source does not wait
// for the API server.
func TestPodSourceInconsistentWarnsAndSays(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			<-r.Context().Done() // a watch that never sends
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
	}))
	defer api.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(kubeconfigYAML(api.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	f := &factory{Err: &errb, Getenv: func(string) string { return "" }}
	ps, err := startPodSource(t.Context(), f, &globalOptions{PodSource: podSourceAuto, Kubeconfig: kubeconfig, NodeName: "vm"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := engine.Snapshot{Sandboxes: []engine.Sandbox{{ID: "sb", PodUID: "u1", PodNamespace: "default", PodName: "web",
		State: engine.SandboxReady, ConfigSource: engine.ConfigSourceAPI}}}
	want := "pod source inconsistent: node vm: 1 pods running here are not listed by the API server " + api.URL + " (wrong --node-name? e.g. default/web): limits only"
	for range 3 {
		p, err := ps.PodSource(t.Context(), snap)
		if err != nil || p.Ready || p.Description != want {
			t.Fatalf("pod source = %+v, %v; want not ready, described %q", p, err, want)
		}
	}
	proctest.Done(t, "Stop, with the API server's watch held open", ps.Stop)
	if got := errb.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, want) {
		t.Errorf("stderr %q, want one warning with %q", got, want)
	}
}
