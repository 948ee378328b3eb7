package fleet

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodegc/nodegc/api/v1alpha1"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// nodeGC is an agent's object with a heartbeat at beat; change alters
// its unstructured form.
func nodeGC(t *testing.T, name string, beat time.Time, change func(map[string]any)) *unstructured.Unstructured {
	t.Helper()
	hb := metav1.NewTime(beat)
	u, err := v1alpha1.ToUnstructured(&v1alpha1.NodeGC{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1alpha1.NodeGCStatus{HeartbeatTime: &hb, Band: v1alpha1.Band{High: 85, Low: 80},
			ImageFs: &v1alpha1.ImageFs{CapacityBytes: 100, AvailableBytes: 30, UsagePercent: 70}}})
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(u.Object["status"].(map[string]any))
	}
	return u
}

// row is the object's row at now, as Rows makes it.
func row(t *testing.T, u *unstructured.Unstructured) Node {
	t.Helper()
	o, err := decodeObject(u)
	if err != nil {
		t.Fatal(err)
	}
	r := o.(*object).row
	r.State, r.Err = judge(r, now)
	return r
}

func TestRowOfAnObject(t *testing.T) {
	for _, tc := range []struct {
		name    string
		beat    time.Time
		change  func(map[string]any)
		state   State
		errPart string
	}{
		{"a heartbeat a period old is fresh", now.Add(-HeartbeatPeriod), nil, OK, ""},
		{"a heartbeat exactly three periods old is not yet stale", now.Add(-StaleAfter), nil, OK, ""},
		{"a heartbeat past three periods is stale", now.Add(-StaleAfter - time.Second), nil, Stale, "no heartbeat since 2026-11-29T11:44:59Z"},
		{"no heartbeat is an error", now, func(s map[string]any) { delete(s, "heartbeatTime") }, Failed, "no status.heartbeatTime"},
		{"a band upside down is an error", now, func(s map[string]any) { s["band"] = map[string]any{"high": int64(50), "low": int64(90)} }, Failed, "status.band.low 90 above high 50"},
		{"more available than capacity is an error", now, func(s map[string]any) {
			s["imageFs"].(map[string]any)["availableBytes"] = int64(200)
		}, Failed, "availableBytes 200 above capacityBytes 100"},
		{"a field of the wrong type is an error naming the object", now, func(s map[string]any) { s["deadContainers"] = "many" }, Failed, "read NodeGC node-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := row(t, nodeGC(t, "node-a", tc.beat, tc.change))
			if r.Name != "node-a" || r.State != tc.state || !strings.Contains(r.Err, tc.errPart) {
				t.Errorf("row %s: state %q, error %q; want %q with %q", r.Name, r.State, r.Err, tc.state, tc.errPart)
			}
			if (r.Status == nil) != (tc.state == Failed) {
				t.Errorf("status %v for state %s: want one exactly when the object could be read", r.Status, r.State)
			}
		})
	}
}

func TestAListDecodesEachItemAlone(t *testing.T) {
	good := nodeGC(t, "node-a", now, nil)
	bad := nodeGC(t, "node-b", now, func(s map[string]any) { s["deadContainers"] = "many" })
	body, err := json.Marshal(map[string]any{"kind": "NodeGCList", "metadata": map[string]any{"resourceVersion": "7", "continue": "next"},
		"items": []any{good.Object, bad.Object}})
	if err != nil {
		t.Fatal(err)
	}
	var l objectList
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatalf("the list failed with one bad item: %v", err)
	}
	if l.ResourceVersion != "7" || l.Continue != "next" || len(l.Items) != 2 {
		t.Fatalf("list %+v, want version 7, continue next, two items", l.ListMeta)
	}
	a, b := l.Items[0].row, l.Items[1].row
	if a.Name != "node-a" || a.bad != "" || a.Status == nil || a.Status.ImageFs.UsagePercent != 70 {
		t.Errorf("the good item: %+v", a)
	}
	if b.Name != "node-b" || !strings.Contains(b.bad, "read NodeGC node-b") || b.Status != nil {
		t.Errorf("the bad item: %+v, want an error naming it", b)
	}
}

// TestAnErrorIsCutOnARuneBoundary: an object's error, made one line of
// at most 200 bytes for its row, keeps whole runes.
func TestAnErrorIsCutOnARuneBoundary(t *testing.T) {
	got := oneLine("x" + strings.Repeat("é", 150))
	if !utf8.ValidString(got) || got != "x"+strings.Repeat("é", 99)+"…" {
		t.Errorf("oneLine cut to %q", got)
	}
}
