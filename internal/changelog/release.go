package changelog

import "github.com/release-controller/release-controller/internal/releaseimage"

// ReleaseFromPayload builds a Release from what a payload image says about itself
// (releaseimage.Info): its tag, digest, creation time and components with their source
// labels.
func ReleaseFromPayload(p *releaseimage.PayloadInfo) Release {
	r := Release{Name: p.Metadata.Version, Digest: imageDigest(p.Image), Created: p.Metadata.Created}
	if r.Name == "" {
		r.Name = p.References.Tag
	}
	for _, c := range p.References.Components {
		r.Components = append(r.Components, Component{Name: c.Name, Image: c.Image, Source: c.Source, Revision: c.Revision})
	}
	return r
}
