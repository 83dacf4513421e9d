package releaseimage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/release-controller/release-controller/internal/releaseimage"
)

// BenchmarkBuild200 builds a 200-component payload from images in the embedded registry:
// reading every component's labels, writing and pushing the payload.
func BenchmarkBuild200(b *testing.B) {
	const n = 200
	components := make([]releaseimage.Component, n)
	for i := range components {
		name := fmt.Sprintf("component-%03d", i)
		img := labelled(b, ocilabels("https://git.example.com/"+name, fmt.Sprintf("%040x", i)))
		components[i] = releaseimage.Component{Name: name, Image: push(b, "bench/"+name, img)}
	}
	opts := releaseimage.BuildOptions{
		Tag: "1.0.0-2026-11-22-093000", Stream: "bench", Repository: reg.Addr() + "/bench/release",
		Components: components, Created: created,
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := releaseimage.Build(ctx, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/build")
}
