// Package v1 is a minimal copy of Prow's prow.k8s.io/v1 ProwJob API: only the fields the
// release controller writes when it launches a verification and reads back as its result.
// Unknown fields are preserved by the CRD, so real Prow objects round-trip through it.
// The Prow module itself is far too heavy to import.
//
// +kubebuilder:object:generate=true
// +groupName=prow.k8s.io
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// SchemeGroupVersion is Prow's group and version.
	SchemeGroupVersion = schema.GroupVersion{Group: "prow.k8s.io", Version: "v1"}

	// SchemeBuilder registers ProwJob with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}

	// AddToScheme adds ProwJob to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
