package deploy

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// checkPolicy: the ValidatingAdmissionPolicy keeps the agent's
// ServiceAccount to the NodeGC object named after the node its token is
// bound to, on every write of the object and its status, denying when it
// cannot decide; its binding applies it to every object. The
// expressions are those of Kubernetes' own
// test/e2e/auth/e2edata/per_node_validatingadmissionpolicy.yaml (v1.36.3).
// test/cluster proves the policy on a real API server.
func checkPolicy(t *testing.T, o *objects) {
	t.Helper()
	policy, binding := policyNamed(t, o, "nodegc-agent-own-node")
	p := policy.Spec
	if p.FailurePolicy == nil || *p.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy %v, want Fail", ptrString(p.FailurePolicy))
	}
	if p.MatchConstraints == nil || len(p.MatchConstraints.ResourceRules) != 1 {
		t.Fatalf("matchConstraints %+v, want one rule", p.MatchConstraints)
	}
	r := p.MatchConstraints.ResourceRules[0]
	if !slices.Equal(r.APIGroups, []string{"nodegc.io"}) || !slices.Equal(r.Resources, []string{"nodegcs", "nodegcs/status"}) ||
		!slices.Equal(r.Operations, []admissionregistrationv1.OperationType{"CREATE", "UPDATE", "DELETE"}) {
		t.Errorf("rule %+v, want every write of nodegc.io nodegcs and nodegcs/status", r)
	}
	agent := "system:serviceaccount:" + o.ServiceAccount.Namespace + ":" + o.ServiceAccount.Name
	if len(p.MatchConditions) != 1 || p.MatchConditions[0].Expression != `request.userInfo.username == "`+agent+`"` {
		t.Errorf("matchConditions %+v, want the agent's ServiceAccount %s", p.MatchConditions, agent)
	}
	vars := map[string]string{}
	for _, v := range p.Variables {
		vars[v.Name] = v.Expression
	}
	if vars["userNodeName"] != `request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')` ||
		vars["objectNodeName"] != `(request.operation == 'DELETE' ? oldObject : object).?metadata.name.orValue('')` {
		t.Errorf("variables %v", vars)
	}
	var exprs []string
	for _, v := range p.Validations {
		exprs = append(exprs, v.Expression)
		if v.Reason == nil || *v.Reason != "Forbidden" {
			t.Errorf("validation %q: reason %v, want Forbidden (403, not the default 422 Invalid)", v.Expression, ptrString(v.Reason))
		}
	}
	if len(exprs) != 3 || !slices.Equal(exprs[:2], []string{`variables.userNodeName != ""`, `variables.userNodeName == variables.objectNodeName`}) ||
		!strings.Contains(exprs[2], "object.metadata.?labels") || !strings.Contains(exprs[2], "object.metadata.?annotations") {
		t.Errorf("validations %q, want its own node's, and no labels or annotations of its own", exprs)
	}
	checkBinding(t, binding, policy.Name)
	checkCommandPolicy(t, o)
}

// checkCommandPolicy: a command's By must be its writer's name, on every
// write of the object (not its status, which is the agent's).
func checkCommandPolicy(t *testing.T, o *objects) {
	t.Helper()
	policy, binding := policyNamed(t, o, "nodegc-command-by")
	p := policy.Spec
	if p.FailurePolicy == nil || *p.FailurePolicy != admissionregistrationv1.Fail || p.MatchConstraints == nil || len(p.MatchConstraints.ResourceRules) != 1 {
		t.Fatalf("policy %s: %+v", policy.Name, p)
	}
	if r := p.MatchConstraints.ResourceRules[0]; !slices.Equal(r.Resources, []string{"nodegcs"}) ||
		!slices.Equal(r.Operations, []admissionregistrationv1.OperationType{"CREATE", "UPDATE"}) {
		t.Errorf("policy %s: rule %+v", policy.Name, r)
	}
	if len(p.Validations) != 2 {
		t.Errorf("policy %s: %d validations, want one for spec.pass and one for spec.pause", policy.Name, len(p.Validations))
	}
	for _, v := range p.Validations {
		if v.Reason == nil || *v.Reason != "Forbidden" || !strings.Contains(v.Expression, "request.userInfo.username") {
			t.Errorf("policy %s: validation %q reason %v", policy.Name, v.Expression, ptrString(v.Reason))
		}
	}
	checkBinding(t, binding, policy.Name)
}

// policyNamed returns the policy named name and its binding.
func policyNamed(t *testing.T, o *objects, name string) (admissionregistrationv1.ValidatingAdmissionPolicy, admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	var p admissionregistrationv1.ValidatingAdmissionPolicy
	var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, x := range o.Policies {
		if x.Name == name {
			p = x
		}
	}
	for _, x := range o.PolicyBindings {
		if x.Spec.PolicyName == name {
			b = x
		}
	}
	if p.Name == "" || b.Name == "" {
		t.Fatalf("no policy %s with a binding", name)
	}
	return p, b
}

// checkBinding: the binding denies by its policy on every object.
func checkBinding(t *testing.T, binding admissionregistrationv1.ValidatingAdmissionPolicyBinding, policy string) {
	t.Helper()
	b := binding.Spec
	if b.PolicyName != policy || !slices.Equal(b.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) ||
		b.ParamRef != nil || b.MatchResources != nil {
		t.Errorf("binding %+v, want it to deny by policy %s on every object", b, policy)
	}
}

func ptrString[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
