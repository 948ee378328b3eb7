package engine

import "time"

// PlanPass is the pure planner: it decides a pass of the kind from a
// snapshot, a policy and the evaluation time. (Being written; see
// plan_*.go.)
func PlanPass(s Snapshot, p Policy, kind PassKind, now time.Time) Plan {
	return Plan{APIVersion: APIVersion, Kind: KindPlan, EvaluatedAt: now, Pass: kind, Policy: p}
}
