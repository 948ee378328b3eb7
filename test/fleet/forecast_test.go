package fleet

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/internal/kubetest"
)

// TestFleetForecast writes an agent's eviction forecast into a real
// kube-apiserver under deploy/crd.yaml: the schema keeps it (a field it
// did not declare would be pruned silently), `nodegc fleet -o json` and
// `kubectl get nodegcs` show it, and a forecast with times but not
// filling, which no agent writes, is refused by the schema's rule.
func TestFleetForecast(t *testing.T) {
	api, cs, dyn, bin := fleetAPI(t, false)
	now := time.Now().UTC().Truncate(time.Second)
	at, earliest := metav1.NewTime(now.Add(3*time.Hour)), metav1.NewTime(now.Add(2*time.Hour))
	st := status(now, 70, 0)
	st.Forecast = &v1alpha1.Forecast{Status: "filling", At: &at, Earliest: &earliest}
	writeObject(t, dyn, "node-filling", createNode(t, cs, "node-filling"), st)

	f := fleetJSON(t, bin, api.Admin)["node-filling"].Status
	if f == nil || f.Forecast == nil || f.Forecast.Status != "filling" || !f.Forecast.At.Time.Equal(at.Time) ||
		!f.Forecast.Earliest.Time.Equal(earliest.Time) || f.Forecast.Latest != nil {
		t.Errorf("node-filling's forecast through the API server: %+v, want the one written", f)
	}
	out, err := exec.Command(kubetest.Binary(t, "kubectl"), "--kubeconfig", api.Admin, "get", "nodegcs").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PRESSURE-AT") || !strings.Contains(string(out), at.Format(time.RFC3339)) {
		t.Errorf("kubectl get nodegcs: %v\n%s", err, out)
	}

	st.Forecast.Status = "not-filling"
	err = putStatus(t, dyn, "node-filling", "", st)
	if err == nil || !strings.Contains(err.Error(), "at, earliest and latest are set while filling alone") {
		t.Errorf("a not-filling forecast with times: %v, want the schema's rule", err)
	}
}
