package deploy

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxObjectBytes bounds the JSON of a NodeGC's spec and status, the
// part of the object the fleet view reads (its row and node view): an
// agent, or anyone who may write an object, cannot make every reader of
// the fleet hold and decode a large one (issue 36's finding 6, where an
// agent's 400 MB reply took the fleet to 611 MB). The kubelet's own
// Node status is tens of KB.
const maxObjectBytes = 16 << 10

// keyBound matches a rule bounding a map's keys, as the API server runs
// it: self.all(k, size(k) <= N).
var keyBound = regexp.MustCompile(`^self\.all\(k, size\(k\) <= (\d+)\)$`)

// TestCRDBoundsWhatAnAgentWrites: every string of the schema's spec and
// status has a maxLength (or is an enum or a date-time), every map a
// maxProperties and a bound on its keys (a CEL rule: the schema's
// maxLength cannot reach a key), so the API server refuses an object
// whose spec and status could exceed maxObjectBytes, as JSON with every
// rune escaped (6 bytes).
func TestCRDBoundsWhatAnAgentWrites(t *testing.T) {
	props, ok, _ := unstructured.NestedMap(version(t, crd(t)), "schema", "openAPIV3Schema", "properties")
	if !ok {
		t.Fatal("no schema properties")
	}
	total := 0
	for _, part := range []string{"spec", "status"} {
		n, err := schemaBound(part, props[part].(map[string]any))
		if err != nil {
			t.Error(err)
			continue
		}
		t.Logf("%s: at most %d bytes of JSON", part, n)
		total += n
	}
	if total > maxObjectBytes {
		t.Errorf("the schema lets spec and status reach %d bytes of JSON, above %d", total, maxObjectBytes)
	}
}

// The JSON of a date-time, a number or a boolean, at most.
const (
	dateTimeBytes = len(`"2006-01-02T15:04:05.999999999+07:00"`)
	numberBytes   = len("-9223372036854775808")
	runeBytes     = len(`\u001b`)
)

// schemaBound is the largest JSON a value of schema at path can be, or
// an error naming a string, map or array without a bound.
func schemaBound(path string, schema map[string]any) (int, error) {
	switch schema["type"] {
	case "string":
		return stringBound(path, schema)
	case "integer", "number", "boolean":
		return numberBytes, nil
	case "object":
		if add, ok := schema["additionalProperties"].(map[string]any); ok {
			return mapBound(path, schema, add)
		}
		n := len("{}")
		props, _ := schema["properties"].(map[string]any)
		for name, p := range props {
			v, err := schemaBound(path+"."+name, p.(map[string]any))
			if err != nil {
				return 0, err
			}
			n += len(`"":,`) + len(name) + v
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: type %v has no bound here (an array needs maxItems and a rule of its own)", path, schema["type"])
}

// stringBound is a string's largest JSON: a date-time's, an enum's
// longest value, or maxLength runes each escaped.
func stringBound(path string, schema map[string]any) (int, error) {
	if schema["format"] == "date-time" {
		return dateTimeBytes, nil
	}
	if enum, ok := schema["enum"].([]any); ok {
		n := 0
		for _, v := range enum {
			n = max(n, len(fmt.Sprint(v))+2)
		}
		return n, nil
	}
	max, ok := count(schema["maxLength"])
	if !ok {
		return 0, fmt.Errorf("%s: a string without maxLength: an agent may write one of any length", path)
	}
	return 2 + max*runeBytes, nil
}

// mapBound is a map's largest JSON: maxProperties entries of its
// longest key and value.
func mapBound(path string, schema, values map[string]any) (int, error) {
	entries, ok := count(schema["maxProperties"])
	if !ok {
		return 0, fmt.Errorf("%s: a map without maxProperties", path)
	}
	key := -1
	rules, _ := schema["x-kubernetes-validations"].([]any)
	for _, r := range rules {
		if m := keyBound.FindStringSubmatch(fmt.Sprint(r.(map[string]any)["rule"])); m != nil {
			key, _ = strconv.Atoi(m[1])
		}
	}
	if key < 0 {
		return 0, fmt.Errorf("%s: a map whose keys have no bound (want the rule self.all(k, size(k) <= N)): an agent may write a key of any length", path)
	}
	v, err := schemaBound(path+"[]", values)
	if err != nil {
		return 0, err
	}
	return len("{}") + entries*(len(`"":,`)+key*runeBytes+v), nil
}

// count is a schema's bound as decoded from YAML (a whole number).
func count(v any) (int, bool) {
	switch n := v.(type) {
	case int64:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	}
	return 0, false
}
