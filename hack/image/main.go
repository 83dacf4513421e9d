// Command image makes the release-controller image index out of static binaries (see
// internal/imagebuild) and pushes it to a registry, or writes it as an OCI image layout.
// `make image` runs it; nothing else needs it, so the shipped binary does not carry it.
//
//	go run ./hack/image --binary linux/amd64=bin/image-build/linux-amd64/release-controller \
//	    --binary linux/arm64=... --ca-der .../bundle.der --version v1.2.3 \
//	    [--push registry/repo:tag | --layout bin/image]
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/release-controller/release-controller/internal/imagebuild"
)

type binaries []imagebuild.Binary

func (b *binaries) String() string { return fmt.Sprint(*b) }

func (b *binaries) Set(s string) error {
	platform, path, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return fmt.Errorf("want OS/ARCH[/VARIANT]=PATH, got %q", s)
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return err
	}
	*b = append(*b, imagebuild.Binary{Platform: *p, Path: path})
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var (
		bins                binaries
		caDER, caPEM        string
		push, layoutDir     string
		archive, archiveTag string
		meta                imagebuild.Metadata
		sourceDateEpoch     string
	)
	fs.Var(&bins, "binary", "OS/ARCH[/VARIANT]=PATH of a static binary; repeat for each platform of the index")
	fs.StringVar(&caDER, "ca-der", "", "CA certificates as concatenated DER (bundle.der of golang.org/x/crypto/x509roots/fallback/bundle)")
	fs.StringVar(&caPEM, "ca-pem", "", "CA certificates as a PEM bundle (instead of --ca-der)")
	fs.StringVar(&push, "push", "", "push the index to this reference (registry/repository:tag)")
	fs.StringVar(&layoutDir, "layout", "", "write the index as an OCI image layout into this folder (replacing the layout there); when --push is empty")
	fs.StringVar(&archive, "archive", "", "write the image of the only --binary as a docker archive (docker save's format: kind load image-archive, k3d image import, ctr images import take it) to this file; when --push and --layout are empty")
	fs.StringVar(&archiveTag, "archive-tag", "", "the archive's image name (default release-controller:<version tag>)")
	fs.StringVar(&meta.Version, "version", "", "release-controller version (label org.opencontainers.image.version; the layout's tag)")
	fs.StringVar(&meta.Revision, "revision", "", "source commit (label org.opencontainers.image.revision)")
	fs.StringVar(&meta.Source, "source", "", "source repository URL (label org.opencontainers.image.source)")
	fs.StringVar(&sourceDateEpoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "time of every file and configuration, in seconds since the epoch (default $SOURCE_DATE_EPOCH, else 0)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(bins) == 0 {
		return errors.New("no --binary given")
	}
	if n := countSet(push, layoutDir, archive); n != 1 {
		return errors.New("give one of --push, --layout and --archive")
	}
	if archive != "" && len(bins) != 1 {
		return errors.New("--archive holds one platform: give one --binary")
	}
	if sourceDateEpoch != "" {
		secs, err := strconv.ParseInt(sourceDateEpoch, 10, 64)
		if err != nil {
			return fmt.Errorf("source date epoch %q: %w", sourceDateEpoch, err)
		}
		meta.Created = time.Unix(secs, 0).UTC()
	}
	opts := imagebuild.Options{Metadata: meta}
	switch {
	case caDER != "" && caPEM != "":
		return errors.New("give --ca-der or --ca-pem, not both")
	case caDER != "":
		der, err := os.ReadFile(caDER)
		if err != nil {
			return err
		}
		if opts.CACertificates, err = imagebuild.CertificatesPEM(der); err != nil {
			return fmt.Errorf("%s: %w", caDER, err)
		}
	case caPEM != "":
		var err error
		if opts.CACertificates, err = os.ReadFile(caPEM); err != nil {
			return err
		}
	default:
		return errors.New("no CA certificates: give --ca-der or --ca-pem")
	}

	start := time.Now()
	idx, err := imagebuild.Index(bins, opts)
	if err != nil {
		return err
	}
	if err := describe(out, idx); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if push != "" {
		ref, err := name.ParseReference(push)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "==> pushing to %s\n", ref)
		if err := pushIndex(ctx, ref, idx, out); err != nil {
			return err
		}
		fmt.Fprintf(out, "pushed %s@%s (%s)\n", ref.Context(), digest, time.Since(start).Round(100*time.Millisecond))
		return nil
	}
	if archive != "" {
		return writeArchive(out, idx, archive, cmp.Or(archiveTag, "release-controller:"+imagebuild.Tag(meta.Version)))
	}
	tag := imagebuild.Tag(meta.Version)
	fmt.Fprintf(out, "==> writing the OCI image layout %s (image %s)\n", layoutDir, tag)
	if err := imagebuild.WriteLayout(layoutDir, idx, tag); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s: index %s (%s); push it with e.g. `skopeo copy --all oci:%s:%s docker://REGISTRY/REPO:TAG`\n",
		layoutDir, digest, time.Since(start).Round(100*time.Millisecond), layoutDir, tag)
	return nil
}

func countSet(values ...string) int {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	return n
}

// writeArchive writes the index's only image to path as a docker archive named tag.
func writeArchive(out io.Writer, idx v1.ImageIndex, path, tag string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("archive tag %q: %w", tag, err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	img, err := idx.Image(manifest.Manifests[0].Digest)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "==> writing the docker archive %s (image %s)\n", path, ref)
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s: load it with e.g. `kind load image-archive %s` and run the image %s\n", path, path, ref)
	return nil
}

// describe prints each platform's image: digest and size of its layers.
func describe(out io.Writer, idx v1.ImageIndex) error {
	manifest, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, desc := range manifest.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return err
		}
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		var total int64
		for _, l := range layers {
			size, err := l.Size()
			if err != nil {
				return err
			}
			total += size
		}
		fmt.Fprintf(out, "  %-14s %s  %d layers, %.1f MB compressed\n", desc.Platform, desc.Digest, len(layers), float64(total)/1e6)
	}
	return nil
}

// pushIndex pushes idx, printing progress every 10%.
func pushIndex(ctx context.Context, ref name.Reference, idx v1.ImageIndex, out io.Writer) error {
	updates := make(chan v1.Update, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := int64(-1)
		for u := range updates {
			if u.Total == 0 {
				continue
			}
			if step := u.Complete * 10 / u.Total; step != last {
				last = step
				fmt.Fprintf(out, "  %3d%% of %.1f MB\n", step*10, float64(u.Total)/1e6)
			}
		}
	}()
	err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithProgress(updates))
	<-done
	return err
}
