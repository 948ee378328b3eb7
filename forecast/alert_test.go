package forecast_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/promtest"
)

// exampleRules are the groups of deploy/examples/prometheusrule.yaml as
// a Prometheus rule file, annotations left out (promtool compares them
// whole, and the descriptions quote the value).
func exampleRules(t *testing.T) []byte {
	t.Helper()
	return promtest.ExampleRules(t, func(r map[string]any) { delete(r, "annotations") })
}

// seriesValues renders a forecast bound a minute apart in promtool's
// notation: "_" where there is no sample (not enough history).
func seriesValues(fs []forecast.Forecast, bound func(forecast.Forecast) float64) string {
	vals := make([]string, len(fs))
	for i, f := range fs {
		switch v := bound(f); {
		case math.IsNaN(v):
			vals[i] = "_"
		case math.IsInf(v, 1):
			vals[i] = "+Inf"
		default:
			vals[i] = fmt.Sprintf("%.0f", v)
		}
	}
	return strings.Join(vals, " ")
}

// alertCase is one evaluation of the alert rules and the alerts that
// must be firing then.
type alertCase struct {
	at       time.Duration
	severity []string
}

// promtoolAlerts runs the example rules in promtool (Prometheus's own
// rule engine) on the eviction forecasts, a minute apart, and checks
// each case.
func promtoolAlerts(t *testing.T, fs []forecast.Forecast, cases []alertCase) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		kubetest.SkipOrFail(t, "no promtool (Debian's prometheus package has it)")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), exampleRules(t), 0o600); err != nil {
		t.Fatal(err)
	}
	bounds := map[string]func(forecast.Forecast) float64{
		"estimate": func(f forecast.Forecast) float64 { return f.Estimate },
		"upper":    func(f forecast.Forecast) float64 { return f.Upper },
	}
	var series []map[string]any
	for name, b := range bounds {
		series = append(series, map[string]any{
			"series": fmt.Sprintf(`nodegc_forecast_seconds{line="eviction",bound=%q,node="sim"}`, name),
			"values": seriesValues(fs, b),
		})
	}
	var tests []map[string]any
	for _, c := range cases {
		exp := []map[string]any{}
		for _, sev := range c.severity {
			bound := map[string]string{"warning": "estimate", "critical": "upper"}[sev]
			exp = append(exp, map[string]any{"exp_labels": map[string]string{"severity": sev, "line": "eviction", "bound": bound, "node": "sim"}})
		}
		tests = append(tests, map[string]any{"eval_time": c.at.String(), "alertname": "NodeImageFsDiskPressureForecast", "exp_alerts": exp})
	}
	doc := map[string]any{"rule_files": []string{"rules.yaml"}, "evaluation_interval": "1m",
		"tests": []map[string]any{{"interval": "1m", "input_series": series, "alert_rule_test": tests}}}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "test.yaml"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "test", "rules", "test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// evictionForecasts are the agent's eviction forecasts at each reading.
func evictionForecasts(run simRun) []forecast.Forecast {
	fs := make([]forecast.Forecast, len(run.readings))
	for i := range run.readings {
		fs[i] = forecast.PredictLine(run.readings[:i+1], forecast.LineEviction, run.lines)
	}
	return fs
}

// TestAlertFiresBeforeEviction: on a simulated node whose GC frees less
// and less, the example alerts evaluated by Prometheus's rule engine
// fire (warning and critical) before what GC cannot remove crosses the
// eviction line, and neither fires in the first 20 minutes (not enough
// history).
func TestAlertFiresBeforeEviction(t *testing.T) {
	run := simulate(t, backtestScenarios()[5].withDuration(8*time.Hour))
	cross := -1
	for i, c := range run.evCrossed {
		if c {
			cross = i
			break
		}
	}
	if cross < 60 {
		t.Fatalf("eviction line crossed at minute %d, want a scenario that crosses it after at least an hour", cross)
	}
	fs := evictionForecasts(run)
	t.Logf("eviction line crossed at minute %d; warning fires at minute %d, critical at %d", cross,
		firstHeld(fs, func(f forecast.Forecast) bool { return f.Estimate < 24*3600 }, 30),
		firstHeld(fs, func(f forecast.Forecast) bool { return f.Upper < 4*3600 }, 10))
	promtoolAlerts(t, fs, []alertCase{
		{at: 20 * time.Minute},
		{at: time.Duration(cross-1) * time.Minute, severity: []string{"critical", "warning"}},
	})
}

// firstHeld returns the first minute at which cond has held for the
// minutes before it (a rule's for:), or -1.
func firstHeld(fs []forecast.Forecast, cond func(forecast.Forecast) bool, minutes int) int {
	held := 0
	for i, f := range fs {
		if !cond(f) {
			held = 0
			continue
		}
		if held++; held > minutes {
			return i
		}
	}
	return -1
}

// TestAlertQuietOnSteadyNode: a node whose pods churn but whose image
// filesystem does not fill raises no alert in 6 hours.
func TestAlertQuietOnSteadyNode(t *testing.T) {
	o := baseNode(3, 0)
	run := simulate(t, scenario{node: o, duration: 6 * time.Hour})
	promtoolAlerts(t, evictionForecasts(run), []alertCase{{at: 3 * time.Hour}, {at: 6 * time.Hour}})
}
