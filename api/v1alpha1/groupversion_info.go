// Package v1alpha1 holds the release-controller.dev/v1alpha1 API: release streams and
// the release payloads they produce.
//
// +kubebuilder:object:generate=true
// +groupName=release-controller.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "release-controller.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &schemeBuilder{}

	// AddToScheme adds the kinds of this package to a scheme.
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

// AddToScheme adds the registered kinds to s under GroupVersion.
func (b *schemeBuilder) AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, b.objects...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
