// Package v1 is a minimal copy of Prow's prow.k8s.io/v1 ProwJob API: only the fields the
// release controller writes when it launches a verification and reads back as its result.
// Unknown fields are preserved by the CRD, so real Prow objects round-trip through it.
// The Prow module itself is far too heavy to import.
//
// +kubebuilder:object:generate=true
// +groupName=prow.k8s.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// SchemeGroupVersion is Prow's group and version.
	SchemeGroupVersion = schema.GroupVersion{Group: "prow.k8s.io", Version: "v1"}

	// SchemeBuilder registers ProwJob with a scheme.
	SchemeBuilder = &schemeBuilder{}

	// AddToScheme adds ProwJob to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// schemeBuilder collects the kinds each types file registers in its init. API packages import
// only apimachinery, so that importing them does not pull in controller-runtime.
type schemeBuilder struct {
	objects []runtime.Object
}

// Register adds kinds (each with its List) to those AddToScheme adds.
func (b *schemeBuilder) Register(objects ...runtime.Object) {
	b.objects = append(b.objects, objects...)
}

// AddToScheme adds the registered kinds to s under SchemeGroupVersion.
func (b *schemeBuilder) AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, b.objects...)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
