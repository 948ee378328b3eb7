package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodegc/nodegc/engine"
)

// Policy flag names: the kubelet's own, so an operator can copy them from a
// kubelet command line.
const (
	flagHighThreshold   = "image-gc-high-threshold"
	flagLowThreshold    = "image-gc-low-threshold"
	flagMinImageTTL     = "minimum-image-ttl-duration"
	flagMaxImageAge     = "image-maximum-gc-age"
	flagMinContainerTTL = "minimum-container-ttl-duration"
	flagMaxPerContainer = "maximum-dead-containers-per-container"
	flagMaxContainers   = "maximum-dead-containers"
	flagLowDiskMB       = "low-diskspace-threshold-mb"
	flagPodLogsDir      = "pod-logs-dir"
	// flagMargin is the agent's own: how far below the kubelet's image
	// GC band its band sits.
	flagMargin = "image-gc-margin"
	// evictionHard has no flag of this form; it is named as in the config.
	settingEvictionHard = "evictionHard"
)

// policyFlags holds the policy flags as parsed, and which of them were set
// on the command line (pflag's Changed), since only those override the
// kubelet config.
type policyFlags struct {
	HighThreshold   int
	LowThreshold    int
	MinImageTTL     time.Duration
	MaxImageAge     time.Duration
	MinContainerTTL time.Duration
	MaxPerContainer int
	MaxContainers   int
	LowDiskMB       int64
	PodLogsDir      string
	// Margin is the agent's --image-gc-margin: the percentage points its
	// image GC band sits below the kubelet's (0 for every other command:
	// they show and run the kubelet's own band).
	Margin int
	// Changed holds the names of the flags given on the command line.
	Changed map[string]bool
}

// addPolicyFlags registers the kubelet's GC flags on fs, with the kubelet's
// defaults.
func addPolicyFlags(fs *pflag.FlagSet, p *policyFlags) {
	fs.IntVar(&p.HighThreshold, flagHighThreshold, engine.DefaultImageGCHighThresholdPercent,
		"image filesystem usage percent at or above which image GC runs (100 with no max age disables periodic image GC)")
	fs.IntVar(&p.LowThreshold, flagLowThreshold, engine.DefaultImageGCLowThresholdPercent,
		"image filesystem usage percent image GC frees down to")
	fs.DurationVar(&p.MinImageTTL, flagMinImageTTL, engine.DefaultImageMinimumGCAge,
		"minimum age of an image, since nodegc first saw it, before it may be removed")
	fs.DurationVar(&p.MaxImageAge, flagMaxImageAge, 0,
		"remove images unused for longer than this, whatever the usage (0 = off)")
	fs.DurationVar(&p.MinContainerTTL, flagMinContainerTTL, engine.DefaultContainerMinAge,
		"minimum age of a dead container before it may be removed")
	fs.IntVar(&p.MaxPerContainer, flagMaxPerContainer, engine.DefaultMaxPerPodContainer,
		"dead instances to keep per (pod, container name); < 0 keeps all")
	fs.IntVar(&p.MaxContainers, flagMaxContainers, engine.DefaultMaxContainers,
		"maximum dead containers on the node; < 0 means no limit")
	fs.Int64Var(&p.LowDiskMB, flagLowDiskMB, engine.DefaultLowDiskSpaceThresholdMiB,
		"nodegc's own check of the old kubelet diskSpaceManager threshold (gone from current kubelets): a filesystem with less than this many MiB available is reported below it")
	fs.StringVar(&p.PodLogsDir, flagPodLogsDir, engine.DefaultPodLogsDir,
		"the kubelet's podLogsDir: pod log directories of removable pods are removed from it")
}

// changedFlags returns the names of the flags set on the command line.
func changedFlags(cmd *cobra.Command) map[string]bool {
	changed := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { changed[f.Name] = true })
	return changed
}

// Provenance sources.
const (
	sourceFlag    = "flag"
	sourceDefault = "default"
	sourceEnv     = "env CONTAINER_RUNTIME_ENDPOINT"
)

// sourceConfig is the provenance of a value read from the kubelet config.
func sourceConfig(path string) string { return "kubelet config " + path }

// setting is one effective value and where it came from.
type setting struct {
	// Name is the flag name (or the config field when there is no flag).
	Name   string
	Value  string
	Source string
	// ConfigField is the kubelet config field that can also set it.
	ConfigField string
}

// provenance lists the effective settings in display order.
type provenance []setting

// source returns where the named setting came from, "" if unknown.
func (p provenance) source(name string) setting {
	for _, s := range p {
		if s.Name == name {
			return s
		}
	}
	return setting{}
}

// resolvePolicy computes the effective policy: a flag given on the command
// line wins, then the kubelet config, then the kubelet's default. It
// validates the result; a *engine.PolicyError names the flag, and says
// which config field set the value when the config did.
func resolvePolicy(pf policyFlags, cfg *kubeletConfig) (engine.Policy, provenance, error) {
	r := &policyResolver{p: engine.DefaultPolicy(), pf: pf, cfg: cfg}
	if cfg != nil {
		r.cfgSource = sourceConfig(cfg.Path)
		r.proc = cfg.Proc
	}
	r.pickImage()
	r.applyMargin()
	r.pickContainer()
	r.pickDisk()
	if r.cmdlineErr != nil {
		return r.p, r.prov, r.cmdlineErr
	}

	if err := r.p.Validate(); err != nil {
		return r.p, r.prov, explainPolicyError(err, r.prov)
	}
	return r.p, r.prov, nil
}

// policyResolver gathers the effective policy setting by setting, with
// where each came from, and the first bad value on the kubelet's command
// line.
type policyResolver struct {
	p    engine.Policy
	prov provenance
	pf   policyFlags
	// cfg is the kubelet config, nil when there is none; cfgSource names
	// it, and proc is the kubelet's process whose command line it read.
	cfg        *kubeletConfig
	cfgSource  string
	proc       *kubeletProcess
	cmdlineErr error
}

// pick records one setting: nodegc's flag, else the kubelet's command
// line (when fromCmdline is given and the kubelet has the flag), else
// the config file (when set), else the default. The kubelet itself
// lets its command line override its config file.
func (r *policyResolver) pick(name, field string, fromFlag func(), fromCmdline func(string) error, fromConfig func() bool, value func() string) {
	src := sourceDefault
	v, onCmdline := r.proc.flag(name)
	switch {
	case r.pf.Changed[name]:
		fromFlag()
		src = sourceFlag
	case fromCmdline != nil && onCmdline:
		if err := fromCmdline(v); err != nil {
			if r.cmdlineErr == nil {
				r.cmdlineErr = usageErrorf("--%s: %q on the %s: %v", name, v, r.proc.source(), err)
			}
			return
		}
		src = r.proc.source()
	case r.cfg != nil && fromConfig != nil && fromConfig():
		src = r.cfgSource
	}
	r.prov = append(r.prov, setting{Name: name, Value: value(), Source: src, ConfigField: field})
}

// pickImage resolves the image-GC settings: the thresholds and the
// minimum and maximum ages.
func (r *policyResolver) pickImage() {
	p, pf, cfg := &r.p, r.pf, r.cfg
	itoa := strconv.Itoa
	r.pick(flagHighThreshold, "imageGCHighThresholdPercent",
		func() { p.Image.HighThresholdPercent = pf.HighThreshold },
		cmdlineInt(&p.Image.HighThresholdPercent),
		func() bool { return setInt(&p.Image.HighThresholdPercent, cfg.ImageGCHighThresholdPercent) },
		func() string { return itoa(p.Image.HighThresholdPercent) })
	r.pick(flagLowThreshold, "imageGCLowThresholdPercent",
		func() { p.Image.LowThresholdPercent = pf.LowThreshold },
		cmdlineInt(&p.Image.LowThresholdPercent),
		func() bool { return setInt(&p.Image.LowThresholdPercent, cfg.ImageGCLowThresholdPercent) },
		func() string { return itoa(p.Image.LowThresholdPercent) })
	r.pick(flagMinImageTTL, "imageMinimumGCAge",
		func() { p.Image.MinAge = pf.MinImageTTL },
		cmdlineDuration(&p.Image.MinAge),
		func() bool { return setDuration(&p.Image.MinAge, cfg.ImageMinimumGCAge) },
		func() string { return p.Image.MinAge.String() })
	// imageMaximumGCAge has no kubelet flag.
	r.pick(flagMaxImageAge, "imageMaximumGCAge",
		func() { p.Image.MaxAge = pf.MaxImageAge }, nil,
		func() bool { return setDuration(&p.Image.MaxAge, cfg.ImageMaximumGCAge) },
		func() string { return p.Image.MaxAge.String() })
}

// applyMargin moves the image GC band Margin points below the kubelet's,
// so that the agent acts first and the kubelet's own image GC stays a
// backstop that never has to act: one GC per node. Only the thresholds
// nodegc's flags did not set move. A kubelet whose image GC is off (high
// 100 and no max age) does not turn the agent's off: the agent takes the
// kubelet's default band, less the margin.
func (r *policyResolver) applyMargin() {
	m, img := r.pf.Margin, &r.p.Image
	if m <= 0 {
		return
	}
	if img.PeriodicDisabled() && !r.pf.Changed[flagHighThreshold] {
		img.HighThresholdPercent = engine.DefaultImageGCHighThresholdPercent
		r.prov.amend(flagHighThreshold, "", "the kubelet's image GC is off: its default")
		if !r.pf.Changed[flagLowThreshold] && img.LowThresholdPercent > engine.DefaultImageGCLowThresholdPercent {
			img.LowThresholdPercent = engine.DefaultImageGCLowThresholdPercent
			r.prov.amend(flagLowThreshold, "", "the kubelet's image GC is off: its default")
		}
	}
	for _, t := range []struct {
		flag string
		v    *int
	}{{flagHighThreshold, &img.HighThresholdPercent}, {flagLowThreshold, &img.LowThresholdPercent}} {
		if r.pf.Changed[t.flag] {
			continue
		}
		*t.v = max(*t.v-m, 0)
		r.prov.amend(t.flag, strconv.Itoa(*t.v), fmt.Sprintf("%s, less --%s %d", r.prov.source(t.flag).Source, flagMargin, m))
	}
}

// amend sets the named setting's value (when not empty) and source.
func (p provenance) amend(name, value, source string) {
	for i := range p {
		if p[i].Name == name {
			if value != "" {
				p[i].Value = value
			}
			p[i].Source = source
		}
	}
}

// pickContainer resolves the container-GC settings, which exist only as
// kubelet flags.
func (r *policyResolver) pickContainer() {
	p, pf := &r.p, r.pf
	itoa := strconv.Itoa
	r.pick(flagMinContainerTTL, "",
		func() { p.Container.MinAge = pf.MinContainerTTL },
		cmdlineDuration(&p.Container.MinAge), nil,
		func() string { return p.Container.MinAge.String() })
	r.pick(flagMaxPerContainer, "",
		func() { p.Container.MaxPerPodContainer = pf.MaxPerContainer },
		cmdlineInt(&p.Container.MaxPerPodContainer), nil,
		func() string { return itoa(p.Container.MaxPerPodContainer) })
	r.pick(flagMaxContainers, "",
		func() { p.Container.MaxContainers = pf.MaxContainers },
		cmdlineInt(&p.Container.MaxContainers), nil,
		func() string { return itoa(p.Container.MaxContainers) })
}

// pickDisk resolves the disk settings: the low-disk threshold, the pod
// logs directory and the hard eviction thresholds.
func (r *policyResolver) pickDisk() {
	p, pf, cfg := &r.p, r.pf, r.cfg
	// --low-diskspace-threshold-mb is gone from current kubelets.
	r.pick(flagLowDiskMB, "",
		func() { p.Disk.ThresholdMiB = pf.LowDiskMB }, nil, nil,
		func() string { return strconv.FormatInt(p.Disk.ThresholdMiB, 10) })
	r.pick(flagPodLogsDir, "podLogsDir",
		func() { p.PodLogsDir = pf.PodLogsDir }, nil,
		func() bool {
			if cfg.PodLogsDir == "" {
				return false
			}
			p.PodLogsDir = cfg.PodLogsDir
			return true
		},
		func() string { return p.PodLogsDir })
	// evictionHard: the kubelet replaces its defaults with the map from
	// the config when the config sets one.
	r.pick(settingEvictionHard, "evictionHard", func() {}, nil,
		func() bool {
			if cfg.EvictionHard == nil {
				return false
			}
			p.Disk.EvictionHard = cfg.EvictionHard
			return true
		},
		func() string { return formatMap(p.Disk.EvictionHard) })
}

// explainPolicyError adds, to a policy error about a value the kubelet
// config set, the config field and file, so the operator knows what to edit.
func explainPolicyError(err error, prov provenance) error {
	var pe *engine.PolicyError
	if !errors.As(err, &pe) {
		return err
	}
	s := prov.source(pe.Field)
	switch {
	case s.Source == sourceFlag || s.Source == sourceDefault || s.Source == "":
		return err
	case s.ConfigField == "" || strings.HasPrefix(s.Source, "kubelet command line"):
		return fmt.Errorf("%w (set by the %s)", err, s.Source)
	}
	return fmt.Errorf("%w (%s in %s)", err, s.ConfigField, s.Source)
}

// cmdlineInt parses a kubelet flag's integer value into dst.
func cmdlineInt(dst *int) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32) // the kubelet's flags are int32
		if err != nil {
			return errors.New("not an integer")
		}
		*dst = int(n)
		return nil
	}
}

// cmdlineDuration parses a kubelet flag's duration value into dst.
func cmdlineDuration(dst *time.Duration) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return errors.New("not a duration such as 2m0s")
		}
		*dst = d
		return nil
	}
}

func setInt(dst *int, v *int) bool {
	if v == nil {
		return false
	}
	*dst = *v
	return true
}

func setDuration(dst *time.Duration, v *time.Duration) bool {
	if v == nil {
		return false
	}
	*dst = *v
	return true
}

// formatMap renders a string map as k=v,... in key order.
func formatMap(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}
