package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/kubetest"
)

// serviceMonitor is what the scrape config is made of in
// deploy/examples/servicemonitor.yaml (monitoring.coreos.com/v1).
type serviceMonitor struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		NamespaceSelector struct {
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels"`
				TargetLabel  string   `json:"targetLabel"`
				Regex        string   `json:"regex,omitempty"`
				Action       string   `json:"action,omitempty"`
			} `json:"relabelings"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// prometheus is a running Prometheus server's HTTP API.
type prometheus struct{ addr string }

// startPrometheus starts Debian's Prometheus (make deps installs it) with
// a scrape config made from deploy/examples/servicemonitor.yaml as the
// Prometheus Operator makes one: targets from the EndpointSlices of the
// Services in the monitor's namespaces, kept when their Service has the
// monitor's labels and their port its name, then the monitor's
// relabelings. Debian builds Prometheus without Kubernetes service
// discovery, so the test reads the Services and EndpointSlices through
// the API server itself and hands them to Prometheus as file_sd targets
// with the meta labels that discovery gives (role endpointslice). Only
// the interval is the test's (1 s, not 60 s). t.Cleanup stops it.
func (c *cluster) startPrometheus(t *testing.T) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		kubetest.SkipOrFail(t, "no prometheus server (make deps installs Debian's prometheus package)")
	}
	data, err := os.ReadFile("../../deploy/examples/servicemonitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sm serviceMonitor
	if err := yaml.Unmarshal(data, &sm); err != nil {
		t.Fatal(err)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("the example ServiceMonitor has %d endpoints, want 1", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	dir := t.TempDir()
	var targets []map[string]any
	if !kubetest.WaitFor(time.Minute, func() bool {
		targets = c.discover(t, sm.Spec.NamespaceSelector.MatchNames)
		return len(targets) > 0
	}) {
		t.Fatalf("no EndpointSlice endpoint in namespaces %v within a minute", sm.Spec.NamespaceSelector.MatchNames)
	}
	sd, err := json.Marshal(targets)
	if err != nil {
		t.Fatal(err)
	}
	sdFile := filepath.Join(dir, "targets.json")
	if err := os.WriteFile(sdFile, sd, 0o600); err != nil {
		t.Fatal(err)
	}
	var relabel []map[string]any
	for k, v := range sm.Spec.Selector.MatchLabels {
		relabel = append(relabel, map[string]any{"source_labels": []string{"__meta_kubernetes_service_label_" + labelName(k)}, "regex": regexp.QuoteMeta(v), "action": "keep"})
	}
	relabel = append(relabel, map[string]any{"source_labels": []string{"__meta_kubernetes_endpointslice_port_name"}, "regex": regexp.QuoteMeta(ep.Port), "action": "keep"})
	for _, r := range ep.Relabelings {
		m := map[string]any{"source_labels": r.SourceLabels, "target_label": r.TargetLabel}
		if r.Regex != "" {
			m["regex"] = r.Regex
		}
		if r.Action != "" {
			m["action"] = r.Action
		}
		relabel = append(relabel, m)
	}
	cfg := map[string]any{
		"global": map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"scrape_configs": []map[string]any{{
			"job_name":        fmt.Sprintf("serviceMonitor/%s/%s/0", sm.Metadata.Namespace, sm.Metadata.Name),
			"metrics_path":    ep.Path,
			"file_sd_configs": []map[string]any{{"files": []string{sdFile}}},
			"relabel_configs": relabel,
		}},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &prometheus{addr: fmt.Sprintf("127.0.0.1:%d", kubetest.FreePort(t))}
	kubetest.StartProcess(t, filepath.Join(dir, "prometheus.log"), bin, "--config.file="+conf,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+p.addr, "--log.level=warn")
	if !kubetest.WaitFor(30*time.Second, func() bool {
		resp, err := http.Get("http://" + p.addr + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("prometheus not ready within 30 s; its log:\n%s", kubetest.Tail(filepath.Join(dir, "prometheus.log"), 20))
	}
	return p
}

// discover lists, through the API server, every endpoint of every
// EndpointSlice of the Services in namespaces, one target per endpoint
// address and port, with the meta labels Prometheus's Kubernetes service
// discovery gives them (role endpointslice).
func (c *cluster) discover(t testing.TB, namespaces []string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ns := range namespaces {
		svcs, err := c.cs.CoreV1().Services(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, svc := range svcs.Items {
			slices, err := c.cs.DiscoveryV1().EndpointSlices(ns).List(t.Context(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
			if err != nil {
				t.Fatal(err)
			}
			for _, es := range slices.Items {
				for _, e := range es.Endpoints {
					for _, p := range es.Ports {
						if p.Port == nil || p.Name == nil {
							continue
						}
						for _, addr := range e.Addresses {
							labels := map[string]string{
								"__meta_kubernetes_namespace":                  ns,
								"__meta_kubernetes_service_name":               svc.Name,
								"__meta_kubernetes_endpointslice_name":         es.Name,
								"__meta_kubernetes_endpointslice_port_name":    *p.Name,
								"__meta_kubernetes_endpointslice_port":         strconv.Itoa(int(*p.Port)),
								"__meta_kubernetes_endpointslice_address_type": string(es.AddressType),
							}
							for k, v := range svc.Labels {
								labels["__meta_kubernetes_service_label_"+labelName(k)] = v
							}
							if e.NodeName != nil {
								labels["__meta_kubernetes_endpointslice_endpoint_node_name"] = *e.NodeName
							}
							if e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
								labels["__meta_kubernetes_pod_name"] = e.TargetRef.Name
								pod, err := c.cs.CoreV1().Pods(ns).Get(t.Context(), e.TargetRef.Name, metav1.GetOptions{})
								if err != nil {
									t.Fatal(err)
								}
								labels["__meta_kubernetes_pod_node_name"] = pod.Spec.NodeName
							}
							out = append(out, map[string]any{
								"targets": []string{net.JoinHostPort(addr, strconv.Itoa(int(*p.Port)))},
								"labels":  labels,
							})
						}
					}
				}
			}
		}
	}
	return out
}

// labelName is a Kubernetes label's name as Prometheus's service
// discovery writes it in a meta label.
func labelName(k string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(k, "_")
}

// promSample is one sample of an instant query's answer.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// value is the sample's value.
func (s promSample) value(t testing.TB) float64 {
	t.Helper()
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("sample value %v: %v", s.Value, err)
	}
	return v
}

// query runs a PromQL instant query.
func (p *prometheus) query(t testing.TB, q string) []promSample {
	t.Helper()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	body := p.get(t, "/api/v1/query?query="+url.QueryEscape(q))
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, body)
	}
	return r.Data.Result
}

// targets is what Prometheus says of its targets, for a failure.
func (p *prometheus) targets(t testing.TB) string {
	return string(p.get(t, "/api/v1/targets"))
}

func (p *prometheus) get(t testing.TB, path string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// readmeQueries are the PromQL queries of the README's metrics table:
// every backticked expression of its PromQL column that names a metric.
func readmeQueries(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile("`([^`]+)`")
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		cols := strings.SplitN(line, " | ", 2)
		if !strings.HasPrefix(line, "| ") || len(cols) != 2 || !strings.Contains(cols[1], "nodegc_") {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cols[1], -1) {
			if strings.Contains(m[1], "nodegc_") {
				out = append(out, strings.ReplaceAll(m[1], `\|`, "|"))
			}
		}
	}
	if len(out) < 15 {
		t.Fatalf("found %d queries in the README's metrics table: the table moved?", len(out))
	}
	return out
}

// filters matches a query that filters (a comparison, and, unless): an
// alert's expression, empty while its condition does not hold.
var filters = regexp.MustCompile(`[<>]|==|!=|\band\b|\bunless\b`)

// promSelector matches a metric selector in a query.
var promSelector = regexp.MustCompile(`nodegc_[a-z_]+(\{[^}]*\})?`)

// TestEveryReadmeQueryAnswers: after a scripted sequence on the real
// cluster (a periodic pass past the high threshold, a no-op, a
// reclaim-all, a reclaim-all whose first deletion fails), every PromQL
// query of the README answers in the real Prometheus: a query that is a
// value returns one that is a number, and in a query that filters (an
// alert's), every metric selector has a series.
func TestEveryReadmeQueryAnswers(t *testing.T) {
	c := sharedCluster(t)
	agent := c.waitAgentReady(t)
	prom := c.startPrometheus(t)
	if !kubetest.WaitFor(time.Minute, func() bool { return len(prom.query(t, fmt.Sprintf(`up{node=%q} == 1`, c.nodeName))) == 1 }) {
		t.Fatalf("Prometheus does not scrape the agent; its targets:\n%s", prom.targets(t))
	}
	attempts := func(trigger, result, reason string) string {
		return fmt.Sprintf(`nodegc_image_gc_attempts_total{reason=%q,result=%q,trigger=%q}`, reason, result, trigger)
	}
	waitMore := func(series string, before []byte) {
		t.Helper()
		if !kubetest.WaitFor(time.Minute, func() bool {
			return metricValue(c.metrics(t, agent.Name), series) > metricValue(before, series)
		}) {
			t.Fatalf("%s did not go up within a minute; the agent's log:\n%s", series, c.agentLog())
		}
	}

	// 1. A periodic pass past the high threshold, 2. then a no-op.
	c.importImages(t, 16, 4<<20, "promql")
	before := c.metrics(t, agent.Name)
	c.fillPastHigh(t)
	waitMore(attempts("periodic", "success", "threshold"), before)
	waitMore(attempts("periodic", "noop", "below-threshold"), c.metrics(t, agent.Name))

	// 3. A reclaim-all, 4. one whose first deletion fails, through the
	// agent's control socket as `nodegc gc --reclaim-all` on the node.
	ctl := control.NewClient(control.SocketPath(filepath.Join(c.dir, "state")), false)
	defer ctl.Close()
	for _, fail := range []int32{0, 1} {
		c.importImages(t, 3, 1<<20, fmt.Sprintf("promql-reclaim%d", fail))
		c.proxy.FailRemoveImage(fail)
		r, err := ctl.Force(t.Context(), engine.PassReclaimAll)
		c.proxy.FailRemoveImage(0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Count(engine.OutcomeRemoved) == 0 || r.Count(engine.OutcomeFailed) != int(fail) {
			t.Fatalf("reclaim-all removed %d and failed %d, want some and %d", r.Count(engine.OutcomeRemoved), r.Count(engine.OutcomeFailed), fail)
		}
	}
	// Prometheus has scraped the failure.
	last := strings.Replace(attempts("reclaim-all", "partial", "delete-error"), "}", fmt.Sprintf(",node=%q}", c.nodeName), 1)
	if !kubetest.WaitFor(30*time.Second, func() bool {
		s := prom.query(t, last)
		return len(s) == 1 && s[0].value(t) >= 1
	}) {
		t.Fatalf("Prometheus has no %s", last)
	}

	for _, q := range readmeQueries(t) {
		if strings.Contains(q, "nodegc_forecast_seconds") {
			// Absent until the forecast has history enough, by its design
			// (metrics/forecast.go); its status answers from the start.
			if len(prom.query(t, `nodegc_forecast_status == 1`)) == 0 {
				t.Errorf("for %s, nodegc_forecast_status has no current answer", q)
			}
			continue
		}
		if filters.MatchString(q) {
			for _, sel := range promSelector.FindAllString(q, -1) {
				if len(prom.query(t, sel)) == 0 {
					t.Errorf("in %s, %s has no series", q, sel)
				}
			}
			continue
		}
		got := prom.query(t, q)
		numbers := 0
		for _, s := range got {
			if v := s.value(t); !math.IsNaN(v) {
				numbers++
			}
		}
		if numbers == 0 {
			t.Errorf("%s answers %+v, want a number", q, got)
		} else if testing.Verbose() {
			t.Logf("%s: %d samples, %v", q, len(got), got[0].Value[1])
		}
	}
}
