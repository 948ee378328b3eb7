package v1alpha1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// full returns a NodeGC with every status field set to its widest value.
func full() *NodeGC {
	at := metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	measured := int64(-1 << 62)
	dead := int32(1 << 30)
	pass := func(kind string) *Pass {
		return &Pass{At: at, Kind: kind, Trigger: "reclaim-all", Result: "failed", Reason: "free-disk-space-failed",
			Removed: 1 << 30, Failed: 1 << 30, TargetBytes: 1 << 62, FreedBytes: 1 << 62, MeasuredBytes: &measured}
	}
	return &NodeGC{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Status: NodeGCStatus{
			Version: "v1.2.3-45-gabcdef0-dirty", StartedAt: &at, HeartbeatTime: &at,
			ImageFs:       &ImageFs{CapacityBytes: 1 << 62, AvailableBytes: 1 << 62, UsagePercent: 100},
			Band:          Band{High: 100, Low: 100},
			LastImagePass: pass("reclaim-all"), LastContainerPass: pass("containers"),
			Kept:           map[string]int32{"in-use": 1 << 30, "pinned": 1 << 30, "sandbox-image": 1 << 30, "too-young": 1 << 30, "not-needed": 1 << 30, "bad-size": 1 << 30},
			DeadContainers: &dead, PodSource: "syncing", EventStream: "unknown",
			Paused:  &Pause{ID: strings.Repeat("i", 64), Since: at, By: strings.Repeat("u", 128), Until: &at},
			Command: &CommandOutcome{ID: strings.Repeat("i", 64), Result: "refused", Message: strings.Repeat("m", 128), At: at, Pass: pass("full")},
			// Times with "filling" alone (the schema's rule).
			Forecast: &Forecast{Status: "filling", At: &at, Earliest: &at, Latest: &at},
		},
	}
}

func TestRoundTrip(t *testing.T) {
	n := full()
	u, err := ToUnstructured(n)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "nodegc.io/v1alpha1" || u.GetKind() != "NodeGC" {
		t.Errorf("apiVersion %q kind %q", u.GetAPIVersion(), u.GetKind())
	}
	got, err := FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	n.APIVersion, n.Kind = APIVersion, Kind
	// Compared as JSON: a time read back is in the local zone.
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(n)
	if string(gb) != string(wb) {
		t.Errorf("round trip:\n got %s\nwant %s", gb, wb)
	}
}

func TestStatusFitsItsBound(t *testing.T) {
	b, err := json.Marshal(full().Status)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxStatusBytes {
		t.Errorf("the widest status is %d bytes of JSON, over %d: %s", len(b), MaxStatusBytes, b)
	}
}

func TestFromUnstructuredRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"another kind", map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n"}}, "not a nodegc.io/v1alpha1"},
		{"a field of the wrong type", map[string]any{"apiVersion": APIVersion, "kind": Kind, "metadata": map[string]any{"name": "n"},
			"status": map[string]any{"band": map[string]any{"high": "85"}}}, "read NodeGC n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromUnstructured(&unstructured.Unstructured{Object: tc.obj})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}
