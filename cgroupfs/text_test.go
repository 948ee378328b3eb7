package cgroupfs

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteText(t *testing.T) {
	f := newFixture(t, ModeV1)
	workloadFixture(f, cgroupfsPaths)
	f.write("/kubepods", "cpu.shares", "3225")
	f.write("/kubepods", "pids.max", "4096")
	f.remove(cgroupfsPaths.buC2, "pids.current")
	tree, err := Read(Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 4, CgroupDriver: "cgroupfs",
		SystemReserved: map[string]string{"memory": "1Gi", "cpu": "500m"}, KubeReserved: map[string]string{"memory": "1Gi", "cpu": "350m"}}, workloadNames())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tree.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(b.String(), f.root, "ROOT")
	want := `cgroup mode:    v1
cgroup driver:  cgroupfs (from kubelet config)
kubepods:       /kubepods
mounts:
  ROOT/cpu,cpuacct  v1  cpu,cpuacct
  ROOT/memory       v1  memory
  ROOT/pids         v1  pids
  ROOT/systemd      v1  systemd
node allocatable: memory 6.0 GiB = capacity 8.0 GiB − system-reserved 1.0 GiB − kube-reserved 1.0 GiB
                  cpu 3150m = capacity 4000m − system-reserved 500m − kube-reserved 350m
kubepods limits:  expected memory 6.0 GiB, cpu.shares 3225, from allocatable (enforceNodeAllocatable has pods)
                  set      memory 6.0 GiB, cpu.shares 3225, pids.max 4096
drift:            none

CGROUP                                                             MEMORY      LIMIT         CPU    PIDS  NOTES
/kubepods                                                         6.8 MiB    6.0 GiB      90.00s      11
├─besteffort                                                    500.0 KiB        max       5.00s       1
│ └─unknown (pod e0000000-0000-0000-0000-00000000000e)          400.0 KiB        max       4.00s       1
│   └─unknown (be5a)                                            300.0 KiB        max       0.00s       1
├─burstable                                                       3.4 MiB        max      55.00s       7
│ └─default/web-7d9 (pod b0000000-0000-0000-0000-00000000000b)    3.3 MiB  512.0 MiB      54.00s       6
│   ├─POD (bb5a)                                                100.0 KiB        max       0.00s       1
│   ├─nginx (bb01)                                                2.0 MiB  256.0 MiB      40.00s       4
│   └─unknown (bb02)                                              1.2 MiB        max      13.00s       0  pids.current: missing
└─prod/db-0 (pod 90000000-0000-0000-0000-000000000009)            2.9 MiB    1.0 GiB      30.00s       3
  └─postgres (9901)                                               2.8 MiB    1.0 GiB      29.00s       2
`
	if got != want {
		t.Errorf("text differs at line %s", firstDiff(got, want))
	}
}

func TestWriteTextShowsDriftAndErrors(t *testing.T) {
	f := newFixture(t, ModeV2)
	f.add(fxNode{path: "/kubepods"})
	f.write("/kubepods", "cpu.weight", "157")
	f.write("/kubepods", "pids.max", "max")
	tree, err := Read(Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tree.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"cgroup mode:    v2 (unified)\n",
		"cgroup driver:  cgroupfs (detected)\n",
		"                  set      memory max, cpu.weight 157\n",
		"drift:            kubepods memory is unlimited; the kubelet would set 8.0 GiB (8589934592 bytes)\n",
		"/kubepods        0 B        max       0.00s       0  psi mem 0.00 cpu 0.00\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

func TestJSON(t *testing.T) {
	f := newFixture(t, ModeV2)
	f.add(fxNode{path: "/kubepods", mem: 4096, limit: 1 << 30, cpuNs: 2000, pids: 1},
		fxNode{path: "/kubepods/besteffort/pod" + uidE, mem: 1},
		fxNode{path: "/kubepods/besteffort/pod" + uidE + "/crio-conmon-be5a", mem: 2})
	f.remove("/kubepods", "memory.pressure")
	f.remove("/kubepods", "cpu.pressure")
	f.remove("/kubepods/besteffort/pod"+uidE, "cpu.pressure")
	f.remove("/kubepods/besteffort/pod"+uidE+"/crio-conmon-be5a", "memory.pressure")
	f.remove("/kubepods/besteffort/pod"+uidE+"/crio-conmon-be5a", "cpu.pressure")
	f.remove("/kubepods/besteffort/pod"+uidE+"/crio-conmon-be5a", "pids.current")
	tree, err := Read(Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tree.JSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `[
  {
    "kind": "root",
    "path": "/kubepods",
    "qos": "",
    "memoryBytes": 4096,
    "memoryLimitBytes": 1073741824,
    "cpuUsageNanos": 2000,
    "pids": 1,
    "children": [
      {
        "kind": "qos",
        "path": "/kubepods/besteffort",
        "qos": "besteffort",
        "memoryBytes": 0,
        "memoryLimitBytes": null,
        "cpuUsageNanos": 0,
        "pids": 0,
        "errors": [
          "memory.current: missing",
          "memory.max: missing",
          "cpu.stat: missing",
          "pids.current: missing"
        ],
        "children": [
          {
            "kind": "pod",
            "path": "/kubepods/besteffort/pode0000000-0000-0000-0000-00000000000e",
            "qos": "besteffort",
            "pod": {
              "uid": "e0000000-0000-0000-0000-00000000000e",
              "name": "unknown",
              "namespace": ""
            },
            "memoryBytes": 1,
            "memoryLimitBytes": null,
            "cpuUsageNanos": 0,
            "pids": 0,
            "psi": {
              "memory": {
                "some": {
                  "avg10": 0,
                  "avg60": 0.5,
                  "avg300": 0.25,
                  "total": 1234
                }
              }
            },
            "children": [
              {
                "kind": "container",
                "path": "/kubepods/besteffort/pode0000000-0000-0000-0000-00000000000e/crio-conmon-be5a",
                "qos": "besteffort",
                "pod": {
                  "uid": "e0000000-0000-0000-0000-00000000000e",
                  "name": "unknown",
                  "namespace": ""
                },
                "container": {
                  "id": "be5a",
                  "name": "unknown"
                },
                "conmon": true,
                "memoryBytes": 2,
                "memoryLimitBytes": null,
                "cpuUsageNanos": 0,
                "pids": 0,
                "errors": [
                  "pids.current: missing"
                ],
                "children": []
              }
            ]
          }
        ]
      }
    ]
  }
]
`
	if string(got) != want {
		t.Errorf("JSON differs at line %s", firstDiff(string(got), want))
	}
}

func TestHumanBytes(t *testing.T) {
	for in, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 30: "5.0 GiB", 1 << 62: "4.0 EiB"} {
		if got := HumanBytes(in); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", in, got, want)
		}
	}
}
