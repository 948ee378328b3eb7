package fleet

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodegc/nodegc/api/v1alpha1"
)

// listJSON is a NodeGCList of n objects as the API server writes it.
func listJSON(b *testing.B, n int) []byte {
	var items []map[string]any
	for i := range n {
		hb := metav1.NewTime(time.Now())
		dead := int32(3)
		st := v1alpha1.NodeGCStatus{Version: "test", HeartbeatTime: &hb, Band: v1alpha1.Band{High: 85, Low: 80},
			ImageFs: &v1alpha1.ImageFs{CapacityBytes: 100 << 30, AvailableBytes: 30 << 30, UsagePercent: 70}, DeadContainers: &dead,
			PodSource: "synced", EventStream: "live", Kept: map[string]int32{"in-use": 3},
			LastImagePass: &v1alpha1.Pass{At: hb, Kind: "images", Trigger: "periodic", Result: "success", Reason: "threshold"}}
		u, _ := v1alpha1.ToUnstructured(&v1alpha1.NodeGC{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sim-%05d", i), UID: "0b7f0c39-3c2b-4d3e-9a51-1f7a1c2e3d4f", ResourceVersion: "123456", CreationTimestamp: hb, Generation: 1,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "x", UID: "0b7f0c39-3c2b-4d3e-9a51-1f7a1c2e3d4f"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "nodegc", Operation: "Update", APIVersion: "nodegc.io/v1alpha1", Time: &hb, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"0b7f0c39\"}":{}}}}`)}},
				{Manager: "nodegc", Operation: "Update", APIVersion: "nodegc.io/v1alpha1", Time: &hb, FieldsType: "FieldsV1", Subresource: "status", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:band":{".":{},"f:high":{},"f:low":{}},"f:deadContainers":{},"f:eventStream":{},"f:heartbeatTime":{},"f:imageFs":{".":{},"f:availableBytes":{},"f:capacityBytes":{},"f:usagePercent":{}},"f:kept":{".":{},"f:in-use":{}},"f:podSource":{},"f:version":{}}}`)}}}}, Status: st})
		items = append(items, u.Object)
	}
	out, _ := json.Marshal(map[string]any{"apiVersion": "nodegc.io/v1alpha1", "kind": "NodeGCList", "metadata": map[string]any{"resourceVersion": "1"}, "items": items})
	return out
}

// BenchmarkListOf5000 decodes a list of 5,000 NodeGC objects (managed
// fields included, as the API server sends them) into rows: through an
// unstructured list and its conversion, as client-go's dynamic client
// would, against objectList's typed decode of each item.
func BenchmarkListOf5000(b *testing.B) {
	data := listJSON(b, 5000)
	b.Run("unstructured then converted", func(b *testing.B) {
		for b.Loop() {
			var l unstructured.UnstructuredList
			if err := l.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
			for i := range l.Items {
				if _, err := decodeObject(&l.Items[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("objectList", func(b *testing.B) {
		for b.Loop() {
			var l objectList
			if err := json.Unmarshal(data, &l); err != nil || len(l.Items) != 5000 {
				b.Fatal(err)
			}
		}
	})
}
