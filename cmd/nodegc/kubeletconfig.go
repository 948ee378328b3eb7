package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodegc/nodegc/engine"
)

// defaultKubeletConfigPath is where kubeadm and most installers put the
// kubelet's configuration; live commands read it when it exists.
const defaultKubeletConfigPath = "/var/lib/kubelet/config.yaml"

// The KubeletConfiguration this reader understands.
const (
	kubeletConfigKind       = "KubeletConfiguration"
	kubeletConfigAPIVersion = "kubelet.config.k8s.io/v1beta1"
)

// kubeletConfig is the part of a KubeletConfiguration (kubelet.config.k8s.io/
// v1beta1) that nodegc uses. It is a local struct rather than
// k8s.io/kubelet's type, which would add 17 MB to the binary. A nil pointer
// or map, or an empty string, means the file does not set the field, so the
// default (or a flag) applies.
type kubeletConfig struct {
	// Path is the file it was read from, for provenance and errors; ""
	// when no file was read (only a running kubelet was found).
	Path string
	// Proc is the running kubelet whose command line overrides the file;
	// nil when none was found or looked for.
	Proc *kubeletProcess

	ImageGCHighThresholdPercent *int
	ImageGCLowThresholdPercent  *int
	ImageMinimumGCAge           *time.Duration
	ImageMaximumGCAge           *time.Duration
	EvictionHard                map[string]string
	ContainerRuntimeEndpoint    string
	CgroupDriver                string
	CgroupRoot                  string
	PodLogsDir                  string
	SystemReserved              map[string]string
	KubeReserved                map[string]string
}

// loadKubeletConfig reads and parses the file. Any problem is a *fileError
// naming the file and, when it is about one field, the field.
func loadKubeletConfig(path string) (*kubeletConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &fileError{Path: path, Err: ioCause(err)}
	}
	return parseKubeletConfig(path, data)
}

// ioCause strips the path that *fs.PathError repeats, since fileError
// already leads with it.
func ioCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parseKubeletConfig decodes a KubeletConfiguration document. Fields
// nodegc does not use are ignored, as the kubelet ignores nothing but
// nodegc is not the kubelet; fields it uses are checked one by one so that
// an error names the field.
func parseKubeletConfig(path string, data []byte) (*kubeletConfig, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, &fileError{Path: path, Err: errors.New(oneLine(err.Error()))}
	}
	c := &kubeletConfig{Path: path}
	if string(js) == "null" { // an empty document sets nothing
		return c, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(js, &fields); err != nil {
		return nil, &fileError{Path: path, Err: errors.New("not a KubeletConfiguration mapping")}
	}
	d := fieldDecoder{path: path, fields: fields}

	var kind, apiVersion string
	if d.get("kind", &kind) && kind != kubeletConfigKind {
		d.fail("kind", fmt.Errorf("must be %s, got %q", kubeletConfigKind, kind))
	}
	if d.get("apiVersion", &apiVersion) && apiVersion != kubeletConfigAPIVersion {
		d.fail("apiVersion", fmt.Errorf("must be %s, got %q", kubeletConfigAPIVersion, apiVersion))
	}
	c.ImageGCHighThresholdPercent = d.percent("imageGCHighThresholdPercent")
	c.ImageGCLowThresholdPercent = d.percent("imageGCLowThresholdPercent")
	c.ImageMinimumGCAge = d.duration("imageMinimumGCAge")
	if c.ImageMinimumGCAge != nil && *c.ImageMinimumGCAge == 0 {
		// The kubelet defaults a zero imageMinimumGCAge in its file to 2
		// minutes (SetDefaults_KubeletConfiguration,
		// pkg/kubelet/apis/config/v1beta1/defaults.go): taken as 0, nodegc
		// would remove images younger than the kubelet ever does. Only its
		// flag, --minimum-image-ttl-duration, can set 0.
		v := engine.DefaultImageMinimumGCAge
		c.ImageMinimumGCAge = &v
	}
	c.ImageMaximumGCAge = d.duration("imageMaximumGCAge")
	c.EvictionHard = d.stringMap("evictionHard")
	if err := checkEvictionHard(c.EvictionHard); err != nil {
		d.fail("evictionHard", err)
	}
	d.get("containerRuntimeEndpoint", &c.ContainerRuntimeEndpoint)
	if d.get("cgroupDriver", &c.CgroupDriver) && c.CgroupDriver != "cgroupfs" && c.CgroupDriver != "systemd" {
		d.fail("cgroupDriver", fmt.Errorf(`must be "cgroupfs" or "systemd", got %q`, c.CgroupDriver))
	}
	d.get("cgroupRoot", &c.CgroupRoot)
	if d.get("podLogsDir", &c.PodLogsDir) {
		if err := engine.CheckPodLogsDir(c.PodLogsDir); err != nil {
			d.fail("podLogsDir", err)
		}
	}
	c.SystemReserved = d.stringMap("systemReserved")
	c.KubeReserved = d.stringMap("kubeReserved")
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// checkEvictionHard checks the syntax of the filesystem signals nodegc
// resolves (imagefs.* and nodefs.*): each is a percentage ("15%") or a
// quantity ("1Gi"), as engine.ParseThreshold reads them. Without the check
// a typo would silently drop the threshold from the disk reserve. Other
// signals (memory.available, pid.available) are not nodegc's to judge.
func checkEvictionHard(m map[string]string) error {
	for _, sig := range sortedKeys(m) {
		if !strings.HasPrefix(sig, "imagefs.") && !strings.HasPrefix(sig, "nodefs.") {
			continue
		}
		// The capacity only scales a percentage; any positive one checks
		// the syntax.
		if _, err := engine.ParseThreshold(m[sig], 1<<40); err != nil {
			return fmt.Errorf("%s: %q is not a percentage such as 15%% or a quantity such as 1Gi", sig, m[sig])
		}
	}
	return nil
}

// fieldDecoder decodes top-level fields one at a time and keeps the first
// error, in the file's field order as nodegc checks them.
type fieldDecoder struct {
	path   string
	fields map[string]json.RawMessage
	err    error
}

func (d *fieldDecoder) fail(field string, err error) {
	if d.err == nil {
		d.err = &fileError{Path: d.path, Field: field, Err: err}
	}
}

// get decodes the field into v and reports whether it was present (and
// not null) and valid.
func (d *fieldDecoder) get(field string, v any) bool {
	raw, ok := d.fields[field]
	if !ok || string(raw) == "null" {
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		d.fail(field, typeError(err))
		return false
	}
	return true
}

func (d *fieldDecoder) percent(field string) *int {
	var n int
	if !d.get(field, &n) {
		return nil
	}
	return &n
}

// duration reads a metav1.Duration: a Go duration string such as "2m0s".
func (d *fieldDecoder) duration(field string) *time.Duration {
	var s string
	if !d.get(field, &s) {
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.fail(field, fmt.Errorf("invalid duration %q (want a Go duration such as \"2m0s\")", s))
		return nil
	}
	return &v
}

func (d *fieldDecoder) stringMap(field string) map[string]string {
	var m map[string]string
	if !d.get(field, &m) {
		return nil
	}
	return m
}

// typeError says what JSON type the field should have had.
func typeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.Kind().String()
		switch want {
		case "int", "int32", "int64":
			want = "an integer"
		case "string":
			want = "a string"
		case "map":
			want = "a mapping of strings"
		}
		if te.Field != "" { // a value inside a map
			return fmt.Errorf("%s: must be %s, got %s", te.Field, want, te.Value)
		}
		return fmt.Errorf("must be %s, got %s", want, te.Value)
	}
	return err
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// sortedKeys returns m's keys in order, for stable output.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
