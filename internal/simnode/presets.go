package simnode

// Demo is the small node `nodegc --demo` runs: about 40 images, 20 pods of
// two containers with one dead attempt each, three deleted pods, and a
// workload that drives the image filesystem past 85% within about 60
// Steps one second apart.
func Demo(seed int64) Options {
	return Options{
		Seed:                seed,
		Images:              40,
		Pods:                20,
		ContainersPerPod:    2,
		DeadPerContainer:    1,
		DeletedPods:         3,
		StaleSandboxes:      2,
		MinImageBytes:       20 * mib,
		MaxImageBytes:       600 * mib,
		InitialUsagePercent: 82,
		BaseUsageBytes:      2 * gib,
		Workload: Workload{
			PullProbability:      0.15, // with image GC every minute: climbs, crosses high, a pass brings it to low
			PullMinBytes:         30 * mib,
			PullMaxBytes:         120 * mib,
			DieProbability:       0.005,
			PodStartProbability:  0.08,
			PodDeleteProbability: 0.06,
		},
	}
}

// DemoLarge is `--demo-scale large`: 2,000 images, 1,000 pods and 5,000
// dead containers, with a workload that fills the disk as Demo does.
func DemoLarge(seed int64) Options {
	return Options{
		Seed:                seed,
		Images:              2000,
		Pods:                1000,
		ContainersPerPod:    1,
		DeadPerContainer:    5,
		StaleSandboxes:      50,
		MinImageBytes:       20 * mib,
		MaxImageBytes:       600 * mib,
		InitialUsagePercent: 72,
		BaseUsageBytes:      20 * gib,
		Workload: Workload{
			PullProbability:      1,
			PullMinBytes:         600 * mib,
			PullMaxBytes:         2 * gib,
			DieProbability:       0.0005,
			PodStartProbability:  0.3,
			PodDeleteProbability: 0.3,
			GrowthBytes:          200 * mib,
		},
	}
}

// Scale is the benchmark node of issue 2: 10,000 images, 5,000 pods of two
// containers, each with ten dead attempts, so 100,000 dead containers
// (and 10,000 running ones). It has no workload.
func Scale(seed int64) Options {
	return Options{
		Seed:             seed,
		Images:           10000,
		Pods:             5000,
		ContainersPerPod: 2,
		DeadPerContainer: 10,
	}
}
