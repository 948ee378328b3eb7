package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksTwoAPIGroups keeps the binary sized for what it uses
// (issue 21): of k8s.io/api it links core/v1 and events/v1 alone, and
// none of client-go's clientset, typed clients or events recorder, which
// link every API group through k8s.io/client-go/kubernetes/scheme (the
// binary was 57 MB stripped with them, 30 MB without).
func TestBinaryLinksTwoAPIGroups(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/nodegc/nodegc/cmd/nodegc").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for pkg := range strings.Lines(string(out)) {
		pkg = strings.TrimSpace(pkg)
		switch {
		case pkg == "k8s.io/api/core/v1", pkg == "k8s.io/api/events/v1":
		case strings.HasPrefix(pkg, "k8s.io/api/"),
			strings.HasPrefix(pkg, "k8s.io/client-go/kubernetes"),
			strings.HasPrefix(pkg, "k8s.io/client-go/tools/events"),
			strings.HasPrefix(pkg, "k8s.io/client-go/tools/record"):
			t.Errorf("the binary links %s: use internal/kubeclient", pkg)
		}
	}
}
