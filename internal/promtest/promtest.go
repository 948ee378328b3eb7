// Package promtest reads the example alerting rules
// (deploy/examples/prometheusrule.yaml) as Prometheus loads a rule file,
// for the tests that evaluate them: promtool's in the forecast package and
// a running Prometheus's in the agent's.
package promtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"sigs.k8s.io/yaml"
)

// ExampleRules returns the PrometheusRule's groups as a Prometheus rule
// file, each rule first passed to edit (which may change or delete its
// fields).
func ExampleRules(t testing.TB, edit func(rule map[string]any)) []byte {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(self), "../../deploy/examples/prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec struct {
			Groups []struct {
				Name  string           `json:"name"`
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			edit(r)
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
