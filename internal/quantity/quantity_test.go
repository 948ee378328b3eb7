package quantity

import (
	"math"
	"testing"
)

func TestValueAndMilliValue(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		want      int64
		wantMilli int64
		err       bool // Value out of range
		errMilli  bool // MilliValue out of range
	}{
		{name: "binary suffix", in: "500Mi", want: 500 << 20, wantMilli: 500 << 20 * 1000},
		{name: "exponent", in: "1e3", want: 1000, wantMilli: 1_000_000},
		{name: "milli rounds up to a whole unit", in: "100m", want: 1, wantMilli: 100},
		{name: "nano rounds up to a milli", in: "1n", want: 1, wantMilli: 1},
		{name: "spaces around are dropped, as the kubelet's map flags drop them", in: " 1Gi ", want: 1 << 30, wantMilli: 1 << 30 * 1000},
		{name: "one below the int64 maximum is in range", in: "9223372036854775806", want: math.MaxInt64 - 1, errMilli: true},
		{name: "the int64 maximum is out of range: ParseQuantity caps larger binary values there", in: "9223372036854775807", err: true, errMilli: true},
		{name: "beyond int64 in decimal is out of range", in: "10E", err: true, errMilli: true},
		{name: "the largest int64 in thousandths is in range", in: "9223372036854775807m", want: 9223372036854776, wantMilli: math.MaxInt64},
		{name: "one past int64 in thousandths is out of range", in: "9223372036854775808m", want: 9223372036854776, errMilli: true},
		{name: "8Ei is 2^63, one past int64", in: "8Ei", err: true, errMilli: true},
		{name: "16Ei is out of range, though Quantity.Value wraps it", in: "16Ei", err: true, errMilli: true},
		{name: "zero is zero", in: "0", want: 0, wantMilli: 0},
		{name: "a negative quantity is an error, as both kubelet readers refuse it", in: "-1", err: true, errMilli: true},
		{name: "a negative milli quantity is an error", in: "-100m", err: true, errMilli: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			got, err := Value(q)
			if (err != nil) != tt.err || (!tt.err && got != tt.want) {
				t.Errorf("Value(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
			}
			gotMilli, err := MilliValue(q)
			if (err != nil) != tt.errMilli || (!tt.errMilli && gotMilli != tt.wantMilli) {
				t.Errorf("MilliValue(%q) = %d, %v; want %d, error %v", tt.in, gotMilli, err, tt.wantMilli, tt.errMilli)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "lots", "Mi", "1Xi", "1/2", "%", "-Mi", "."} {
		t.Run(in, func(t *testing.T) {
			if q, err := Parse(in); err == nil {
				t.Errorf("Parse(%q) = %s, want an error", in, q.String())
			}
		})
	}
}
