package main

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestExpression(t *testing.T) {
	f := func(names ...string) []segment {
		var p []segment
		for _, n := range names {
			if n == "[]" {
				n = ""
			}
			p = append(p, segment{field: n})
		}
		return p
	}
	for _, tc := range []struct {
		name string
		r    rule
		want string
		err  string
	}{
		{"root", rule{rule: "self.metadata.name == self.spec.tag"},
			"[object].all(self, self.metadata.name == self.spec.tag)", ""},
		{"a field, when set", rule{path: f("spec", "tag"), rule: "self.matches('^a$')"},
			"!has(object.spec) || !has(object.spec.tag) || [object.spec.tag].all(self, self.matches('^a$'))", ""},
		{"every item", rule{path: f("spec", "items", "[]", "name"), rule: "size(self) < 5"},
			"!has(object.spec) || !has(object.spec.items) || object.spec.items.all(item2, !has(item2.name) || [item2.name].all(self, size(self) < 5))", ""},
		{"items of items", rule{path: f("spec", "a", "[]", "b", "[]"), rule: "self != ''"},
			"!has(object.spec) || !has(object.spec.a) || object.spec.a.all(item2, !has(item2.b) || item2.b.all(item4, [item4].all(self, self != '')))", ""},
		{"a reserved word", rule{path: f("spec", "namespace"), rule: "self != ''"},
			"!has(object.spec) || !has(object.spec.__namespace__) || [object.spec.__namespace__].all(self, self != '')", ""},
		{"oldSelf on updates, both set", rule{path: f("spec", "tag"), rule: "self == oldSelf"},
			"oldObject == null || !has(object.spec) || !has(oldObject.spec) || !has(object.spec.tag) || !has(oldObject.spec.tag) || [object.spec.tag].all(self, [oldObject.spec.tag].all(oldSelf, self == oldSelf))", ""},
		{"oldSelf under items", rule{path: f("spec", "items", "[]"), rule: "self == oldSelf"}, "", "oldSelf under a list's items"},
		{"a name the expression uses", rule{path: f("spec"), rule: "self.x == request.y"}, "", `names "request"`},
		{"a field CEL cannot name", rule{path: f("spec", "a-b"), rule: "true"}, "", "only letters and digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.r.expression()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}

const testCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.dev
spec:
  group: example.dev
  names: {kind: Thing, plural: things}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - {rule: "self.metadata.name == self.spec.name", message: name differs}
        properties:
          spec:
            type: object
            properties:
              name:
                type: string
                x-kubernetes-validations:
                - {rule: "self == oldSelf", message: name is immutable}
          status:
            type: object
            properties:
              phase:
                type: string
                x-kubernetes-validations:
                - {rule: "self != 'x'", message: not x}
`

func TestGenerateMovesSpecRulesAndKeepsStatusRules(t *testing.T) {
	crd, policy, err := generate([]byte(testCRD), "thing.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(crd), "name differs") || strings.Contains(string(crd), "immutable") {
		t.Errorf("the CRD keeps a rule of its spec or root:\n%s", crd)
	}
	if !strings.Contains(string(crd), "not x") {
		t.Errorf("the CRD lost its status rule:\n%s", crd)
	}
	docs := strings.Split(string(policy), "---\n")
	if len(docs) != 3 {
		t.Fatalf("want a header, a policy and a binding:\n%s", policy)
	}
	var p struct {
		Metadata struct{ Name string }
		Spec     struct {
			MatchConstraints struct {
				ResourceRules []struct{ Resources, Operations []string }
			} `json:"matchConstraints"`
			Validations []struct{ Expression, Message string }
		}
	}
	if err := yaml.Unmarshal([]byte(docs[1]), &p); err != nil {
		t.Fatal(err)
	}
	if p.Metadata.Name != "things.example.dev" {
		t.Errorf("policy name %q", p.Metadata.Name)
	}
	if rr := p.Spec.MatchConstraints.ResourceRules; len(rr) != 1 || strings.Join(rr[0].Resources, ",") != "things" {
		t.Errorf("the policy matches %+v, want things alone (not things/status)", rr)
	}
	var messages []string
	for _, v := range p.Spec.Validations {
		messages = append(messages, v.Message)
	}
	if got := strings.Join(messages, "|"); got != "name differs|spec.name: name is immutable" {
		t.Errorf("messages %q", got)
	}
	if !strings.Contains(docs[2], "kind: ValidatingAdmissionPolicyBinding") || !strings.Contains(docs[2], "policyName: things.example.dev") {
		t.Errorf("binding:\n%s", docs[2])
	}
}
