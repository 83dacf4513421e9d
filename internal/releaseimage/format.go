// Package releaseimage builds and reads release payload images.
//
// A payload image is an OCI image with one layer holding two JSON files:
//
// release-manifests/image-references lists the components, sorted by name:
//
//	{
//	  "kind": "ImageReferences",
//	  "apiVersion": "release-controller.dev/v1alpha1",
//	  "tag": "4.15.0-0.nightly-2026-11-22-093000",
//	  "components": [
//	    {
//	      "name": "api",
//	      "image": "registry.example.com/product/api@sha256:...",
//	      "source": "https://github.com/example/api",
//	      "revision": "3f2c..."
//	    }
//	  ]
//	}
//
// where image is the component's pull spec by digest, and source and revision (omitted when
// empty) are the org.opencontainers.image.source and org.opencontainers.image.revision labels
// of the component image's configuration.
//
// release-manifests/release-metadata describes the release:
//
//	{
//	  "kind": "ReleaseMetadata",
//	  "apiVersion": "release-controller.dev/v1alpha1",
//	  "version": "4.15.0-0.nightly-2026-11-22-093000",
//	  "stream": "nightly",
//	  "previous": ["4.15.0-0.nightly-2026-11-21-093000"],
//	  "metadata": {"url": "https://example.com/release-notes"},
//	  "created": "2026-11-22T09:30:00Z"
//	}
//
// where version is the release tag, previous lists earlier accepted releases of the stream
// (newest first) it can be upgraded from, metadata is free-form (omitted when empty) and
// created is RFC 3339 in UTC.
//
// A payload built for platforms is an OCI image index with one such image per platform,
// described by the index entry's platform and by the image's configuration (os,
// architecture, variant). Each pins that platform's image of every component, and its
// release-metadata names the platform ("platform": "linux/arm64").
//
// The image configuration carries the labels io.release-controller.release (the tag) and
// io.release-controller.stream. The layer is built deterministically (sorted entries, fixed
// owners, modes and modification times), so the same inputs give the same image digest.
package releaseimage

import "time"

// APIVersion versions both files.
const APIVersion = "release-controller.dev/v1alpha1"

// Kinds of the two files.
const (
	KindImageReferences = "ImageReferences"
	KindReleaseMetadata = "ReleaseMetadata"
)

// Paths of the two files inside the image.
const (
	ImageReferencesPath = "release-manifests/image-references"
	ReleaseMetadataPath = "release-manifests/release-metadata"
)

// Labels on the payload image's configuration.
const (
	LabelRelease = "io.release-controller.release"
	LabelStream  = "io.release-controller.stream"
)

// OCI labels read from each component image.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
)

// ImageReferences is the content of release-manifests/image-references.
type ImageReferences struct {
	Kind       string               `json:"kind"`
	APIVersion string               `json:"apiVersion"`
	Tag        string               `json:"tag"`
	Components []ComponentReference `json:"components"`
}

// ComponentReference is one component of a payload.
type ComponentReference struct {
	Name string `json:"name"`
	// Image is the component's pull spec by digest.
	Image string `json:"image"`
	// Source and Revision come from the component image's OCI labels.
	Source   string `json:"source,omitempty"`
	Revision string `json:"revision,omitempty"`
}

// ReleaseMetadata is the content of release-manifests/release-metadata.
type ReleaseMetadata struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	// Version is the release tag.
	Version string `json:"version"`
	Stream  string `json:"stream"`
	// Previous are earlier accepted releases of the stream, newest first.
	Previous []string          `json:"previous"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Created is in UTC, to the second, so it marshals as RFC 3339.
	Created time.Time `json:"created"`
	// Platform is the platform of this image of a payload built for platforms (os/arch or
	// os/arch/variant); empty for a payload of one image.
	Platform string `json:"platform,omitempty"`
}
