package cgroupfs

import (
	"os"
	"reflect"
	"strconv"
	"testing"
)

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		milli bool
		want  int64
		err   bool
	}{
		{"binary suffix", "500Mi", false, 500 << 20, false},
		{"decimal suffix", "1G", false, 1e9, false},
		{"fractional binary suffix", "1.5Gi", false, 3 << 29, false},
		{"plain bytes", "1024", false, 1024, false},
		{"exponent", "1e3", false, 1000, false},
		{"millicores", "100m", true, 100, false},
		{"whole cores in millicores", "2", true, 2000, false},
		{"fractional cores", "0.5", true, 500, false},
		{"a fraction of a byte rounds up, as resource.Quantity does", "100m", false, 1, false},
		{"kilo is lower case k", "1k", false, 1000, false},
		{"garbage is an error", "lots", false, 0, true},
		{"a bare suffix is an error", "Mi", false, 0, true},
		{"a value beyond int64 is an error", "16Ei", false, 0, true},
		{"a value beyond int64 in millicores is an error", "10P", true, 0, true},
		// cmd/kubelet/app/server.go parseResourceList: "resource quantity
		// for %q cannot be negative".
		{"a negative reservation is an error, as the kubelet's parseResourceList refuses it", "-1Gi", false, 0, true},
		{"a negative CPU reservation is an error", "-500m", true, 0, true},
		// component-base cli/flag MapStringString trims each value of
		// --system-reserved and --kube-reserved.
		{"spaces around are dropped, as the kubelet's map flags drop them", " 1Gi ", false, 1 << 30, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQuantity(tt.in, tt.milli)
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("ParseQuantity(%q, %v) = %d, %v; want %d, error %v", tt.in, tt.milli, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestAllocatableAndDrift(t *testing.T) {
	page := uint64(os.Getpagesize())
	const memKB = 8 << 20 // 8 GiB
	capacity := uint64(memKB) << 10
	tests := []struct {
		name          string
		mode          Mode
		cfg           Config
		hugeKB        int64
		kubepodsLimit string // written to the kubepods memory limit file; "" = unlimited
		cpuFile       string // cpu.shares (v1) or cpu.weight (v2) of kubepods
		wantAlloc     int64
		wantMilli     int64
		wantExpected  uint64
		wantDrift     []string
	}{
		{
			name: "a limit equal to capacity minus reservations is no drift", mode: ModeV1,
			cfg:           Config{SystemReserved: map[string]string{"memory": "1Gi", "cpu": "500m"}, KubeReserved: map[string]string{"memory": "512Mi", "cpu": "250m"}},
			kubepodsLimit: strconv.FormatUint(capacity-(1<<30)-(512<<20), 10), cpuFile: strconv.Itoa(3250 * 1024 / 1000),
			wantAlloc: int64(capacity) - (1 << 30) - (512 << 20), wantMilli: 3250, wantExpected: capacity - (1 << 30) - (512 << 20),
		},
		{
			name: "eviction thresholds are not subtracted: a limit lowered by them is drift", mode: ModeV1,
			cfg:           Config{SystemReserved: map[string]string{"memory": "1Gi"}},
			kubepodsLimit: strconv.FormatUint(capacity-(1<<30)-(100<<20), 10), cpuFile: "4096",
			wantAlloc: int64(capacity) - (1 << 30), wantMilli: 4000, wantExpected: capacity - (1 << 30),
			wantDrift: []string{"kubepods memory limit is 6.9 GiB (7411335168 bytes); capacity − reservations is 7.0 GiB (7516192768 bytes)"},
		},
		{
			name: "a decimal reservation compares after the kernel's rounding down to pages", mode: ModeV2,
			cfg:           Config{KubeReserved: map[string]string{"memory": "100M"}},
			kubepodsLimit: strconv.FormatUint((capacity-100e6)/page*page, 10), cpuFile: strconv.FormatUint(cpuSharesToWeight(4096), 10),
			wantAlloc: int64(capacity) - 100e6, wantMilli: 4000, wantExpected: (capacity - 100e6) / page * page,
		},
		{
			name: "an unlimited kubepods is drift", mode: ModeV2, cfg: Config{},
			cpuFile:   "157", // 1 + (4096−2)·9999/262142
			wantAlloc: int64(capacity), wantMilli: 4000, wantExpected: capacity,
			wantDrift: []string{"kubepods memory is unlimited; the kubelet would set 8.0 GiB (8589934592 bytes)"},
		},
		{
			name: "without pods in enforceNodeAllocatable the kubelet sets capacity", mode: ModeV1,
			cfg:           Config{EnforceNodeAllocatable: []string{"system-reserved"}, SystemReserved: map[string]string{"memory": "1Gi"}},
			kubepodsLimit: strconv.FormatUint(capacity, 10), cpuFile: "4096",
			wantAlloc: int64(capacity) - (1 << 30), wantMilli: 4000, wantExpected: capacity,
		},
		{
			name: "reservations beyond capacity give 0, never negative", mode: ModeV1,
			cfg:           Config{SystemReserved: map[string]string{"memory": "16Gi", "cpu": "3"}, KubeReserved: map[string]string{"cpu": "2"}},
			kubepodsLimit: "0", cpuFile: "2",
			wantAlloc: 0, wantMilli: 0, wantExpected: 0,
		},
		{
			name: "pre-allocated huge pages come off allocatable memory", mode: ModeV1,
			cfg: Config{}, hugeKB: 1 << 20,
			kubepodsLimit: strconv.FormatUint(capacity-(1<<30), 10), cpuFile: "4096",
			wantAlloc: int64(capacity) - (1 << 30), wantMilli: 4000, wantExpected: capacity - (1 << 30),
		},
		{
			name: "cpu shares that differ are drift", mode: ModeV1, cfg: Config{},
			kubepodsLimit: strconv.FormatUint(capacity, 10), cpuFile: "1024",
			wantAlloc: int64(capacity), wantMilli: 4000, wantExpected: capacity,
			wantDrift: []string{"kubepods cpu.shares is 1024; the kubelet would set 4096"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.mode)
			limit := uint64(0)
			if tt.kubepodsLimit != "" {
				var err error
				if limit, err = strconv.ParseUint(tt.kubepodsLimit, 10, 64); err != nil {
					t.Fatal(err)
				}
			}
			f.add(fxNode{path: "/kubepods", limit: limit})
			if tt.kubepodsLimit == "0" { // fxNode's 0 means unlimited; write a real 0
				if tt.mode == ModeV2 {
					f.write("/kubepods", "memory.max", "0")
				} else {
					f.write("/kubepods", "memory.limit_in_bytes", "0")
				}
			}
			if tt.mode == ModeV2 {
				f.write("/kubepods", "cpu.weight", tt.cpuFile)
				f.write("/kubepods", "pids.max", "max")
			} else {
				f.write("/kubepods", "cpu.shares", tt.cpuFile)
				f.write("/kubepods", "pids.max", "4096")
			}
			cfg := tt.cfg
			cfg.Root, cfg.Meminfo, cfg.NumCPU = f.root, meminfo(t, memKB, tt.hugeKB), 4
			tree, err := Read(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			a := tree.Allocatable
			if a.MemoryBytes != tt.wantAlloc || a.MilliCPU != tt.wantMilli {
				t.Errorf("allocatable memory %d cpu %dm, want %d %dm", a.MemoryBytes, a.MilliCPU, tt.wantAlloc, tt.wantMilli)
			}
			if a.Expected.MemoryLimitBytes == nil || *a.Expected.MemoryLimitBytes != tt.wantExpected {
				t.Errorf("expected kubepods limit %v, want %d", a.Expected.MemoryLimitBytes, tt.wantExpected)
			}
			if !reflect.DeepEqual(a.Drift, tt.wantDrift) {
				t.Errorf("drift\n got %q\nwant %q", a.Drift, tt.wantDrift)
			}
			if len(a.Errors) != 0 {
				t.Errorf("errors %v", a.Errors)
			}
			if a.Kubepods == nil {
				t.Fatal("no kubepods limits read")
			}
			if tt.mode == ModeV2 && (a.Kubepods.CPUWeight == nil || a.Kubepods.PidsMax != nil) {
				t.Errorf("v2 kubepods limits %+v: want cpu.weight and pids.max max", *a.Kubepods)
			}
			if tt.mode == ModeV1 && (a.Kubepods.CPUShares == nil || a.Kubepods.PidsMax == nil || *a.Kubepods.PidsMax != 4096) {
				t.Errorf("v1 kubepods limits %+v: want cpu.shares and pids.max 4096", *a.Kubepods)
			}
		})
	}
}

func TestAllocatableReportsBadInput(t *testing.T) {
	f := newFixture(t, ModeV1)
	f.add(fxNode{path: "/kubepods"})
	f.write("/kubepods", "pids.max", "max")
	tree, err := Read(Config{Root: f.root, Meminfo: "/nonexistent/meminfo", NumCPU: 1,
		SystemReserved: map[string]string{"memory": "lots"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := tree.Allocatable
	want := []string{
		"read memory capacity: open /nonexistent/meminfo: no such file or directory",
		`systemReserved memory: quantity "lots": not a number with an optional suffix (Ki, Mi, Gi, k, M, G, m, …)`,
	}
	if !reflect.DeepEqual(a.Errors, want) {
		t.Errorf("errors\n got %q\nwant %q", a.Errors, want)
	}
	if len(a.Drift) != 0 {
		t.Errorf("drift %q flagged without a known capacity", a.Drift)
	}
}

func TestMilliCPUToShares(t *testing.T) {
	for milli, want := range map[int64]uint64{0: 2, 1: 2, 100: 102, 1000: 1024, 3250: 3328, 1 << 30: 262144} {
		if got := milliCPUToShares(milli); got != want {
			t.Errorf("milliCPUToShares(%d) = %d, want %d", milli, got, want)
		}
	}
}
