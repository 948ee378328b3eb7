package rules

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
)

func TestCheckDiskReserve(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name      string
		imageFs   model.FsStats
		rootFs    *model.FsStats
		threshold int64
		wantImage model.FsReserve
		wantRoot  *model.FsReserve
	}{
		{
			name:      "available at the threshold is enough",
			imageFs:   nodetest.Fs(10*mib*1024, 256*mib),
			threshold: 256,
			wantImage: model.FsReserve{OK: true, AvailableBytes: 256 * mib},
		},
		{
			name:      "one byte under the threshold is out of disk",
			imageFs:   nodetest.Fs(10*mib*1024, 256*mib-1),
			threshold: 256,
			wantImage: model.FsReserve{OK: false, AvailableBytes: 256*mib - 1},
		},
		{
			name:      "capacity zero is an error and reports enough space",
			imageFs:   model.FsStats{Mountpoint: "/x", CapacityBytes: 0, AvailableBytes: 0},
			threshold: 256,
			wantImage: model.FsReserve{OK: true, AvailableBytes: 0, Error: `invalid capacity 0 on "/x"`},
		},
		{
			name:      "negative available is an error and reports enough space",
			imageFs:   model.FsStats{Mountpoint: "/x", CapacityBytes: 100, AvailableBytes: -1},
			threshold: 256,
			wantImage: model.FsReserve{OK: true, AvailableBytes: -1, Error: `invalid available -1 on "/x"`},
		},
		{
			name:      "an absurd threshold does not overflow and is never met",
			imageFs:   nodetest.Fs(math.MaxInt64, math.MaxInt64),
			threshold: math.MaxInt64,
			wantImage: model.FsReserve{OK: false, AvailableBytes: math.MaxInt64},
		},
		{
			name:      "the root fs is checked when the snapshot has one",
			imageFs:   nodetest.Fs(1<<40, 1<<30),
			rootFs:    &model.FsStats{CapacityBytes: 1 << 40, AvailableBytes: 100 * mib},
			threshold: 256,
			wantImage: model.FsReserve{OK: true, AvailableBytes: 1 << 30},
			wantRoot:  &model.FsReserve{OK: false, AvailableBytes: 100 * mib},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := nodetest.BaseSnapshot()
			s.ImageFs, s.RootFs = tt.imageFs, tt.rootFs
			got := checkDiskReserve(s, model.DiskPolicy{ThresholdMiB: tt.threshold})
			if got.ThresholdMiB != tt.threshold || got.ImageFs != tt.wantImage || !reflect.DeepEqual(got.RootFs, tt.wantRoot) {
				t.Errorf("got %+v (root %+v)\nwant image %+v root %+v", got, got.RootFs, tt.wantImage, tt.wantRoot)
			}
		})
	}
}

func TestCheckDiskReserveEviction(t *testing.T) {
	s := nodetest.BaseSnapshot()
	s.ImageFs = model.FsStats{CapacityBytes: 1000, AvailableBytes: 140, Inodes: 100, InodesFree: 50}
	t.Run("default evictionHard resolves against the image fs when there is no root fs", func(t *testing.T) {
		got := checkDiskReserve(s, model.DiskPolicy{ThresholdMiB: 0, EvictionHard: model.DefaultEvictionHard()})
		want := []model.EvictionLine{
			{Signal: "imagefs.available", Threshold: "15%", ThresholdAmount: 150, Available: 140, Crossed: true},
			{Signal: "nodefs.available", Threshold: "10%", ThresholdAmount: 100, Available: 140, Crossed: false},
			{Signal: "nodefs.inodesFree", Threshold: "5%", Inodes: true, ThresholdAmount: 5, Available: 50, Crossed: false},
		}
		if !reflect.DeepEqual(got.Eviction, want) {
			t.Errorf("eviction = %+v\nwant %+v", got.Eviction, want)
		}
		if got.RootFs != nil {
			t.Errorf("root fs = %+v, want nil without a root fs", got.RootFs)
		}
	})
	t.Run("nodefs signals use the root fs when there is one; quantities and bad thresholds", func(t *testing.T) {
		s := s
		s.RootFs = &model.FsStats{CapacityBytes: 1 << 40, AvailableBytes: 1 << 30}
		got := checkDiskReserve(s, model.DiskPolicy{EvictionHard: map[string]string{
			"nodefs.available":   "2Gi",
			"imagefs.inodesFree": "10",
			"imagefs.available":  "bogus",
			"memory.available":   "100Mi",
		}})
		want := []model.EvictionLine{
			{Signal: "imagefs.inodesFree", Threshold: "10", Inodes: true, ThresholdAmount: 10, Available: 50, Crossed: false},
			{Signal: "nodefs.available", Threshold: "2Gi", ThresholdAmount: 2 << 30, Available: 1 << 30, Crossed: true},
		}
		if !reflect.DeepEqual(got.Eviction, want) {
			t.Errorf("eviction = %+v\nwant %+v", got.Eviction, want)
		}
	})
	// pkg/kubelet/eviction/helpers.go parseThresholdStatement: "ignore 0%
	// and 100%", the signal gets no threshold.
	t.Run("0% and 100% are left out, as the kubelet ignores them", func(t *testing.T) {
		got := checkDiskReserve(s, model.DiskPolicy{EvictionHard: map[string]string{"imagefs.available": "100%", "nodefs.available": "0%"}})
		if len(got.Eviction) != 0 {
			t.Errorf("eviction = %+v, want none", got.Eviction)
		}
	})
	t.Run("inode signals are left out on a filesystem that reports no inodes", func(t *testing.T) {
		s := s
		s.ImageFs.Inodes = 0
		got := checkDiskReserve(s, model.DiskPolicy{EvictionHard: map[string]string{"imagefs.inodesFree": "5%"}})
		if len(got.Eviction) != 0 {
			t.Errorf("eviction = %+v, want none", got.Eviction)
		}
	})
}

func TestParseThreshold(t *testing.T) {
	tests := []struct {
		name     string
		v        string
		capacity int64
		want     int64
		wantErr  bool
	}{
		{name: "a percentage is that share of capacity", v: "15%", capacity: 1000, want: 150},
		{name: "a fractional percentage rounds down", v: "7.5%", capacity: 1001, want: 75},
		{name: "100% is all of it", v: "100%", capacity: 1000, want: 1000},
		{name: "a percentage above 100 is an error", v: "101%", capacity: 1000, wantErr: true},
		// The kubelet's int64(float64(capacity)*float64(percentage))
		// (pkg/kubelet/eviction/api/types.go GetThresholdQuantity): 2^63−1
		// is 2^63 as a float64, so half of it is 2^62.
		{name: "a percentage of a huge capacity does not overflow", v: "50%", capacity: math.MaxInt64, want: 1 << 62},
		{name: "a plain integer is bytes", v: "1024", want: 1024},
		{name: "Ki is 1024", v: "1Ki", want: 1024},
		{name: "Mi is 2^20", v: "500Mi", want: 500 << 20},
		{name: "Gi is 2^30", v: "1Gi", want: 1 << 30},
		{name: "Ti is 2^40", v: "2Ti", want: 2 << 40},
		{name: "k is 1000", v: "3k", want: 3000},
		{name: "M is 10^6", v: "100M", want: 100_000_000},
		{name: "G is 10^9", v: "1G", want: 1_000_000_000},
		{name: "T is 10^12", v: "1T", want: 1_000_000_000_000},
		{name: "a fractional quantity rounds up", v: "1.5Ki", want: 1536},
		{name: "a fraction of a byte rounds up", v: "0.1", want: 1},
		{name: "surrounding spaces are ignored", v: " 1Gi ", want: 1 << 30},
		{name: "a negative quantity is an error", v: "-1Gi", wantErr: true},
		{name: "an unknown suffix is an error", v: "1Xi", wantErr: true},
		// pkg/kubelet/eviction/helpers.go parseThresholdStatement reads a
		// quantity with resource.ParseQuantity, which takes exponents and
		// milli-units, and refuses zero and below ("must be positive").
		{name: "an exponent is a quantity, as the kubelet's resource.ParseQuantity reads it", v: "1e3", want: 1000},
		{name: "a milli-unit rounds up to a whole byte, as the kubelet's resource.ParseQuantity reads it", v: "100m", want: 1},
		{name: "a zero quantity is an error, as the kubelet's parseThresholdStatement refuses it", v: "0", wantErr: true},
		{name: "a zero quantity with a suffix is an error", v: "0Gi", wantErr: true},
		// helpers.go parsePercentage: strconv.ParseFloat(strings.TrimRight(v,
		// "%"), 32), then float32(value)/100, checked within [0, 1].
		{name: "a negative percentage is an error, as the kubelet's parseThresholdStatement refuses it", v: "-5%", capacity: 1000, wantErr: true},
		{name: "a percentage is resolved at float32 precision, as the kubelet's parsePercentage reads it", v: "70%", capacity: 1000, want: 699},
		{name: "a percentage in exponent form is a percentage, as strconv.ParseFloat reads it", v: "1e1%", capacity: 1000, want: 100},
		{name: "every trailing percent sign is dropped, as the kubelet's strings.TrimRight drops them", v: "15%%", capacity: 1000, want: 150},
		{name: "a percentage beyond float32 is an error, as the kubelet's strconv.ParseFloat refuses it", v: "1e39%", capacity: 1000, wantErr: true},
		{name: "a NaN percentage is an error here, though the kubelet accepts it", v: "NaN%", capacity: 1000, wantErr: true},
		{name: "an empty value is an error", v: "", wantErr: true},
		{name: "a bare suffix is an error", v: "Gi", wantErr: true},
		{name: "a bare percent sign is an error", v: "%", wantErr: true},
		{name: "a value beyond int64 is an error", v: "9000000Ei", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseThreshold(tt.v, tt.capacity)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseThreshold(%q) = %d, want an error", tt.v, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseThreshold(%q, %d) = %d, %v; want %d", tt.v, tt.capacity, got, err, tt.want)
			}
		})
	}
}

// TestEvictionLineJSON: issue 9 found nodefs.inodesFree reported as
// "thresholdBytes": 5, "availableBytes": 50, inode counts under byte names.
func TestEvictionLineJSON(t *testing.T) {
	tests := []struct {
		name    string
		line    model.EvictionLine
		want    string
		notWant string
	}{
		{
			name:    "an inode signal's amounts are named for inodes",
			line:    model.EvictionLine{Signal: "nodefs.inodesFree", Threshold: "5%", Inodes: true, ThresholdAmount: 5, Available: 50},
			want:    `{"signal":"nodefs.inodesFree","threshold":"5%","thresholdInodes":5,"availableInodes":50,"crossed":false}`,
			notWant: "Bytes",
		},
		{
			name:    "a byte signal's amounts are named for bytes, zero included",
			line:    model.EvictionLine{Signal: "imagefs.available", Threshold: "15%", ThresholdAmount: 150, Available: 0, Crossed: true},
			want:    `{"signal":"imagefs.available","threshold":"15%","thresholdBytes":150,"availableBytes":0,"crossed":true}`,
			notWant: "Inodes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.line)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want || strings.Contains(string(b), tt.notWant) {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
			var back model.EvictionLine
			if err := json.Unmarshal(b, &back); err != nil || back != tt.line {
				t.Errorf("round trip = %+v, %v; want %+v", back, err, tt.line)
			}
		})
	}
}
