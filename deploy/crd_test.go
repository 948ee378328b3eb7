package deploy

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodegc/nodegc/api/v1alpha1"
)

// crd reads crd.yaml.
func crd(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var o objects
	decode(t, "crd.yaml", data, &o)
	return o.CRD
}

// TestCRDNames: the CRD serves the names api/v1alpha1 uses, cluster-scoped
// with a status subresource (so the agent's status writes never touch
// spec, and RBAC can grant nodegcs/status apart).
func TestCRDNames(t *testing.T) {
	c := crd(t)
	str := func(path ...string) string {
		s, _, _ := unstructured.NestedString(c, path...)
		return s
	}
	for _, tc := range []struct{ got, want string }{
		{str("metadata", "name"), v1alpha1.Resource + "." + v1alpha1.Group},
		{str("spec", "group"), v1alpha1.Group},
		{str("spec", "scope"), "Cluster"},
		{str("spec", "names", "kind"), v1alpha1.Kind},
		{str("spec", "names", "listKind"), v1alpha1.ListKind},
		{str("spec", "names", "plural"), v1alpha1.Resource},
	} {
		if tc.got != tc.want {
			t.Errorf("crd.yaml has %q, want %q", tc.got, tc.want)
		}
	}
	v := version(t, c)
	if v["name"] != v1alpha1.Version || v["served"] != true || v["storage"] != true {
		t.Errorf("version %v %v %v", v["name"], v["served"], v["storage"])
	}
	if _, ok, _ := unstructured.NestedMap(v, "subresources", "status"); !ok {
		t.Error("no status subresource")
	}
}

// TestCRDSchemaHasEveryField: the API server prunes the fields a
// structural schema does not declare, silently; so every JSON field of
// NodeGC's spec and status must be in the schema, with the type it has
// in Go.
func TestCRDSchemaHasEveryField(t *testing.T) {
	status, ok, _ := unstructured.NestedMap(version(t, crd(t)), "schema", "openAPIV3Schema", "properties", "status")
	if !ok {
		t.Fatal("no status schema")
	}
	matchSchema(t, "status", reflect.TypeFor[v1alpha1.NodeGCStatus](), status)
	spec, ok, _ := unstructured.NestedMap(version(t, crd(t)), "schema", "openAPIV3Schema", "properties", "spec")
	if !ok {
		t.Fatal("no spec schema")
	}
	matchSchema(t, "spec", reflect.TypeFor[v1alpha1.NodeGCSpec](), spec)
}

// TestCRDPrinterColumns: each column's path is a field of the type.
func TestCRDPrinterColumns(t *testing.T) {
	cols, _, _ := unstructured.NestedSlice(version(t, crd(t)), "additionalPrinterColumns")
	if len(cols) < 6 {
		t.Fatalf("%d printer columns", len(cols))
	}
	for _, col := range cols {
		path := col.(map[string]any)["jsonPath"].(string)
		typ := reflect.TypeFor[v1alpha1.NodeGC]()
		for _, name := range strings.Split(strings.TrimPrefix(path, "."), ".") {
			typ = fieldType(typ, name)
			if typ == nil {
				t.Errorf("column %v: no field %s in %s", col.(map[string]any)["name"], name, path)
				break
			}
		}
	}
}

// version returns the CRD's one version.
func version(t *testing.T, c map[string]any) map[string]any {
	t.Helper()
	vs, _, _ := unstructured.NestedSlice(c, "spec", "versions")
	if len(vs) != 1 {
		t.Fatalf("%d versions, want 1", len(vs))
	}
	return vs[0].(map[string]any)
}

// fieldType returns the type of typ's field whose JSON name is name,
// through pointers; nil when there is none.
func fieldType(typ reflect.Type, name string) reflect.Type {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return nil
	}
	for f := range typ.Fields() {
		if f.Anonymous {
			if ft := fieldType(f.Type, name); ft != nil {
				return ft
			}
			continue
		}
		if jsonName(f) == name {
			return f.Type
		}
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return n
}

// matchSchema checks that schema declares typ's JSON shape at path.
func matchSchema(t *testing.T, path string, typ reflect.Type, schema map[string]any) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	want := ""
	switch {
	case typ == reflect.TypeFor[metav1.Time]():
		if schema["type"] != "string" || schema["format"] != "date-time" {
			t.Errorf("%s: %v %v, want a date-time string", path, schema["type"], schema["format"])
		}
		return
	case typ.Kind() == reflect.String:
		want = "string"
	case typ.Kind() == reflect.Bool:
		want = "boolean"
	case slices.Contains([]reflect.Kind{reflect.Int32, reflect.Int64}, typ.Kind()):
		want = "integer"
	case typ.Kind() == reflect.Map:
		want = "object"
		add, _ := schema["additionalProperties"].(map[string]any)
		if add == nil {
			t.Errorf("%s: a map without additionalProperties", path)
			return
		}
		matchSchema(t, path+"[]", typ.Elem(), add)
	case typ.Kind() == reflect.Struct:
		want = "object"
		props, _ := schema["properties"].(map[string]any)
		for f := range typ.Fields() {
			name := jsonName(f)
			p, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s.%s is not in the schema: the API server would prune it", path, name)
				continue
			}
			matchSchema(t, path+"."+name, f.Type, p)
		}
		if len(props) != typ.NumField() {
			t.Errorf("%s: the schema has %d fields, the type %d", path, len(props), typ.NumField())
		}
	default:
		t.Fatalf("%s: no rule for %s", path, typ)
	}
	if schema["type"] != want {
		t.Errorf("%s: type %v, want %s", path, schema["type"], want)
	}
}
