package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Values of MatchingRule.Type, as Cincinnati clients read them.
const (
	// MatchingRuleAlways applies the risk to every cluster.
	MatchingRuleAlways = "Always"
	// MatchingRulePromQL applies the risk to a cluster whose monitoring answers the query with
	// a result of 1 (0: not exposed; anything else, or an error: the client goes on to the next rule).
	MatchingRulePromQL = "PromQL"
)

// MatchingRule says which clusters a risk applies to, as Cincinnati's conditional edges carry
// it. A client evaluates a risk's rules in order; a rule it does not know or cannot evaluate
// falls through to the next; a risk none of whose rules evaluates is treated as applying.
// +kubebuilder:validation:XValidation:rule="self.type == 'PromQL' ? has(self.promql) : !has(self.promql)",message="promql is set exactly when type is PromQL"
type MatchingRule struct {
	// Type is Always or PromQL.
	// +kubebuilder:validation:Enum=Always;PromQL
	Type string `json:"type"`
	// PromQL holds the query of a PromQL rule.
	// +optional
	PromQL *PromQLRule `json:"promql,omitempty"`
}

// PromQLRule is the query of a PromQL matching rule.
type PromQLRule struct {
	// PromQL is a query whose answer is 1 for clusters exposed to the risk and 0 for the others.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	PromQL string `json:"promql"`
}

// UpgradeRiskSpec says which upgrade edges carry a risk and what clusters are told about it.
type UpgradeRiskSpec struct {
	// Stream limits the risk to one ReleaseStream of the namespace; empty: every stream of
	// the namespace.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Stream string `json:"stream,omitempty"`

	// To is the version the risky upgrades lead into, or an anchored regular expression
	// (^…$, Go syntax) of such versions.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('^') || (self.endsWith('$') && ''.matches(self) == ''.matches(self))",message="to must be a version or an anchored regular expression (^…$) that compiles"
	// +kubebuilder:validation:XValidation:rule="self.startsWith('^') || self.matches('^[0-9A-Za-z.+_-]+$')",message="to must be a version (digits, letters, '.', '-', '+', '_') or an anchored regular expression (^…$)"
	To string `json:"to"`

	// From is an anchored regular expression (^…$, Go syntax) of the versions the risky
	// upgrades start from; empty: every version.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.startsWith('^') && self.endsWith('$') && ''.matches(self) == ''.matches(self)",message="from must be an anchored regular expression (^…$) that compiles"
	// +optional
	From string `json:"from,omitempty"`

	// Name identifies the risk to clusters (Cincinnati's risk name, which the
	// cluster-version operator uses as a condition reason): CamelCase, e.g. AWSOldBootImages.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Name string `json:"name"`

	// Message says what goes wrong and who is exposed, in a sentence or two.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message"`

	// URL links to the risk's description (a bug, a knowledge-base article).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="url must be an absolute http or https URL"
	URL string `json:"url"`

	// MatchingRules say which clusters the risk applies to, in order. Empty: the edges are
	// blocked for every cluster (removed from the graph) rather than served as conditional.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	MatchingRules []MatchingRule `json:"matchingRules,omitempty"`

	// FixedIn names the first version without the problem, for people reading the risk.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	FixedIn string `json:"fixedIn,omitempty"`
}

// UpgradeRisk declares a known problem with upgrades into some versions. The update service
// (/graph) serves the matching edges as Cincinnati conditional edges carrying the risk, or,
// with no matching rules, leaves them out for every cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=risk,categories=release-controller
// +kubebuilder:printcolumn:name="Risk",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="To",type=string,JSONPath=`.spec.to`
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=`.spec.from`
// +kubebuilder:printcolumn:name="Stream",type=string,JSONPath=`.spec.stream`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type UpgradeRisk struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec UpgradeRiskSpec `json:"spec"`
}

// UpgradeRiskList is a list of UpgradeRisks.
//
// +kubebuilder:object:root=true
type UpgradeRiskList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UpgradeRisk `json:"items"`
}

func init() {
	SchemeBuilder.Register(&UpgradeRisk{}, &UpgradeRiskList{})
}
