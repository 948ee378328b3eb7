// Package quantity reads Kubernetes resource quantities ("500Mi", "1.5G",
// "100m", "1e3") into int64 with apimachinery's resource.ParseQuantity,
// adding the checks it does not make: Quantity.Value and MilliValue do not
// report a value beyond int64, and ParseQuantity itself caps a
// binary-suffixed value such as "16Ei" at the int64 maximum and reads a bare
// suffix such as "Mi" as zero.
package quantity

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

var (
	maxValue = resource.NewQuantity(math.MaxInt64, resource.DecimalSI)
	maxMilli = resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)
)

// errSyntax says what a quantity looks like; ParseQuantity's own errors
// quote a regular expression.
const errSyntax = "not a number with an optional suffix (Ki, Mi, Gi, k, M, G, m, …)"

// Parse parses s as the kubelet parses a quantity given on its command
// line: spaces around it are dropped, as component-base's cli/flag map
// flags (--system-reserved, --eviction-hard) drop them, and the rest goes to
// resource.ParseQuantity. A quantity without a digit ("Mi", which
// ParseQuantity reads as 0) is an error: it is a typo, not a zero.
func Parse(s string) (resource.Quantity, error) {
	t := strings.TrimSpace(s)
	q, err := resource.ParseQuantity(t)
	if err != nil || !strings.ContainsAny(t, "0123456789") {
		return resource.Quantity{}, fmt.Errorf("quantity %q: %s", s, errSyntax)
	}
	return q, nil
}

// Value is q.Value (rounded up to a whole unit) of a quantity that is not
// negative, or an error when q is negative or too large. Both kubelet
// readers nodegc mirrors refuse a negative quantity (parseResourceList in
// cmd/kubelet/app/server.go, parseThresholdStatement in
// pkg/kubelet/eviction/helpers.go), and Quantity.Value is wrong for large
// negative ones. The int64 maximum itself is out of range: ParseQuantity
// caps a larger binary-suffixed value ("16Ei") at it, so it stands for
// "too large", and no real reservation or threshold is 8 EiB.
func Value(q resource.Quantity) (int64, error) {
	if err := nonNegative(q); err != nil {
		return 0, err
	}
	if q.Cmp(*maxValue) >= 0 {
		return 0, fmt.Errorf("quantity %s: out of range", q.String())
	}
	return q.Value(), nil
}

// MilliValue is q.MilliValue (thousandths, rounded up) of a quantity that
// is not negative, or an error when q is negative or q×1000 lies beyond
// int64.
func MilliValue(q resource.Quantity) (int64, error) {
	if err := nonNegative(q); err != nil {
		return 0, err
	}
	if q.Cmp(*maxMilli) > 0 {
		return 0, fmt.Errorf("quantity %s: out of range", q.String())
	}
	return q.MilliValue(), nil
}

func nonNegative(q resource.Quantity) error {
	if q.Sign() < 0 {
		return fmt.Errorf("quantity %s: negative", q.String())
	}
	return nil
}
