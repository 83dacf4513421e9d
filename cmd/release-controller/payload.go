package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/buildinput"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/kubeclient"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/signing"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

func newPayloadCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "payload",
		Short: "Build, inspect and tombstone release payloads",
	}
	cmd.AddCommand(newPayloadBuildCommand(), newPayloadInfoCommand(), newPayloadChangeLogCommand(), newPayloadVerifyCommand(), newPayloadTombstoneCommand())
	return cmd
}

func newPayloadBuildCommand() *cobra.Command {
	var (
		kube         kubeclient.Options
		payloadKey   string
		inputFile    string
		registryWait time.Duration
	)
	cmd := &cobra.Command{
		Use:   "build (--payload NAMESPACE/NAME | --input FILE)",
		Short: "Build a ReleasePayload's image and push it",
		Long: `Build the payload image of a ReleasePayload — its components with their source and
revision labels, and up to 5 earlier accepted releases of its stream — and push it to the
payload's repository as <repository>:<tag>. The creation job runs this. The last line printed
is the payload image's pull spec by digest.

--payload reads the ReleasePayload (and its namespace's payloads, for the earlier releases)
from the cluster. --input reads the same from a JSON file instead, which the controller writes
into a ConfigMap for a creation job on another cluster (the stream's creationCluster): such a
build needs no access to the controller's cluster. Exactly one of the two.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (payloadKey == "") == (inputFile == "") {
				return fmt.Errorf("give exactly one of --payload NAMESPACE/NAME and --input FILE")
			}
			if inputFile != "" {
				data, err := os.ReadFile(inputFile)
				if err != nil {
					return fmt.Errorf("reading the build input: %w", err)
				}
				in, err := buildinput.Parse(data)
				if err != nil {
					return fmt.Errorf("%s: %w", inputFile, err)
				}
				return buildFromInput(cmd.Context(), in, registryWait, cmd.OutOrStdout())
			}
			namespace, name, ok := strings.Cut(payloadKey, "/")
			if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
				return fmt.Errorf("--payload must be NAMESPACE/NAME, got %q", payloadKey)
			}
			cfg, err := kube.Config()
			if err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
			if err != nil {
				return fmt.Errorf("connecting to the cluster: %w", err)
			}
			return buildPayload(cmd.Context(), c, namespace, name, registryWait, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&payloadKey, "payload", "", "the ReleasePayload to build, as NAMESPACE/NAME")
	f.StringVar(&inputFile, "input", "", "build from this JSON file (a creation job on another cluster) instead of a ReleasePayload")
	f.DurationVar(&registryWait, "registry-wait", DefaultRegistryWait, "while the registry is unreachable or answers 5xx or 429, build again with a growing pause for at most this long (0: fail at once)")
	kube.AddFlags(f)
	cmd.MarkFlagsMutuallyExclusive("payload", "input")
	return cmd
}

// The creation job's service account (--build-service-account) reads the payload it builds
// and lists the payloads of its namespace for the earlier releases. These are the only RBAC
// markers of this package: its package is the input of the build role
// (config/rbac/build/role.yaml, see the Makefile's generate).
// +kubebuilder:rbac:groups=release-controller.dev,resources=releasepayloads,verbs=get;list

// DefaultRegistryWait is how long `payload build` rides out a registry that cannot answer: a
// registry restart or a short outage does not fail the payload.
const DefaultRegistryWait = 5 * time.Minute

// maxBuildPause bounds the pause between two builds while the registry cannot answer.
const maxBuildPause = 30 * time.Second

// buildPayload builds and pushes the payload namespace/name, printing progress and then the
// image's pull spec by digest to out. While the registry cannot answer (releaseimage.Transient)
// it builds again, pausing 1 s, 2 s, 4 s … up to maxBuildPause, for at most wait; a build is
// the same image every time (its creation time is the payload's), so building again is safe.
func buildPayload(ctx context.Context, c client.Client, namespace, name string, wait time.Duration, out io.Writer) error {
	var payload v1alpha1.ReleasePayload
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &payload); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("release payload %s/%s not found", namespace, name)
		}
		return fmt.Errorf("reading release payload %s/%s: %w", namespace, name, err)
	}
	var others v1alpha1.ReleasePayloadList
	if err := c.List(ctx, &others, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing the release payloads of %s: %w", namespace, err)
	}
	in, err := buildinput.Of(&payload, others.Items)
	if err != nil {
		return err
	}
	return buildFromInput(ctx, in, wait, out)
}

// buildFromInput builds and pushes the payload in describes, as buildPayload says.
func buildFromInput(ctx context.Context, in buildinput.Input, wait time.Duration, out io.Writer) error {
	namespace, name := in.Namespace, in.Payload
	fmt.Fprintf(out, "building %s of stream %s: %d components, previous releases: %s\n",
		in.Tag, in.Stream, len(in.Components), listOrNone(in.Previous))
	opts := in.BuildOptions()
	// The base image's layers are read from the registry like the components'.
	opts.Remote = registryclient.New().Options(ctx)
	opts.Progress = out
	giveUp := time.Now().Add(wait)
	pause := time.Second
	res, err := releaseimage.Build(ctx, opts)
	for err != nil && releaseimage.Transient(err) && time.Now().Add(pause).Before(giveUp) {
		fmt.Fprintf(out, "the registry cannot answer: %v; building again in %s (giving up at %s)\n", err, pause, giveUp.UTC().Format(time.TimeOnly))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, maxBuildPause)
		res, err = releaseimage.Build(ctx, opts)
	}
	if err != nil {
		return fmt.Errorf("building release payload %s/%s: %w", namespace, name, err)
	}
	_, err = fmt.Fprintln(out, res.Image)
	return err
}

func newPayloadInfoCommand() *cobra.Command {
	var output, platform string
	cmd := &cobra.Command{
		Use:   "info PULLSPEC [--platform OS/ARCH]",
		Short: "Show what a payload image holds",
		Long: `Show a payload image's release tag, stream, creation time, previous releases and
components (name, image, source, revision). -o json prints everything the image holds.
Of a payload built for platforms (an image index), --platform picks the platform's image,
whose components are pinned to that platform's images; without it, the first platform's.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output must be text or json, got %q", output)
			}
			ctx := cmd.Context()
			if err := checkPlatformFlag(platform); err != nil {
				return err
			}
			info, err := releaseimage.PlatformInfo(ctx, args[0], platform, registryclient.New().Options(ctx)...)
			if err != nil {
				return err
			}
			if output == "json" {
				data, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", data)
				return err
			}
			return printInfo(cmd.OutOrStdout(), info)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&platform, "platform", "", "of a payload built for platforms, the platform to show (os/arch or os/arch/variant)")
	return cmd
}

// printInfo writes info as a short header and a table of components.
func printInfo(out io.Writer, info *releaseimage.PayloadInfo) error {
	meta := info.Metadata
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Image:\t%s\n", info.Image)
	if info.Index != "" {
		fmt.Fprintf(tw, "Platform:\t%s\n", meta.Platform)
		fmt.Fprintf(tw, "Index:\t%s (platforms %s)\n", info.Index, strings.Join(info.Platforms, ", "))
	}
	fmt.Fprintf(tw, "Tag:\t%s\n", meta.Version)
	fmt.Fprintf(tw, "Stream:\t%s\n", meta.Stream)
	fmt.Fprintf(tw, "Created:\t%s\n", meta.Created.Format(time.RFC3339))
	fmt.Fprintf(tw, "Previous:\t%s\n", listOrNone(meta.Previous))
	for _, k := range slices.Sorted(maps.Keys(meta.Metadata)) {
		fmt.Fprintf(tw, "Metadata %s:\t%s\n", k, meta.Metadata[k])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nComponents (%d):\n", len(info.References.Components))
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tIMAGE\tSOURCE\tREVISION")
	for _, c := range info.References.Components {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Image, cmp.Or(c.Source, "-"), cmp.Or(c.Revision, "-"))
	}
	return tw.Flush()
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}

func newPayloadChangeLogCommand() *cobra.Command {
	var (
		output  string
		clFlags changelogFlags
	)
	cmd := &cobra.Command{
		Use:   "changelog FROM TO",
		Short: "Show the changes between two payload images",
		Long: `Show the changelog between two payload images given by pull spec (registry/repository:tag
or @sha256:digest): the components added, removed and rebuilt, and for each updated component
the commits between the two source revisions its images record. Repositories are cloned into
--changelog-cache-dir (a line on stderr per clone or fetch) and reused by later runs. -o json
prints the OpenShift release-controller's ChangeLog JSON.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "markdown" && output != "json" {
				return fmt.Errorf("--output must be markdown or json, got %q", output)
			}
			cfg := clFlags.config(userCacheDir())
			progress := cmd.ErrOrStderr()
			cfg.OnFetch = func(url string, clone bool) {
				if clone {
					fmt.Fprintf(progress, "cloning %s\n", url)
				} else {
					fmt.Fprintf(progress, "fetching %s\n", url)
				}
			}
			cfg.OnFetchError = func(url string, err error) {
				fmt.Fprintf(progress, "fetching %s failed: %v\n", url, err)
			}
			changeLogs, err := changelog.Setup(cmd.Context(), nil, cfg)
			if err != nil {
				return err
			}
			cl, err := changeLogs.ChangeLogOfImages(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if output == "json" {
				data, err := json.MarshalIndent(cl, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", data)
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), cl.Markdown())
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "markdown", "output format: markdown or json")
	clFlags.addCacheFlags(cmd.Flags(), userCacheDir())
	return cmd
}

func newPayloadVerifyCommand() *cobra.Command {
	var (
		keyRef, storeURL, platform, format string
		predicateTypes                     []string
	)
	cmd := &cobra.Command{
		Use:   "verify PULLSPEC --key FILE|URL [--format openpgp|sigstore|attestation] [--store URL] [--platform OS/ARCH]",
		Short: "Check that a payload image is signed by a trusted key",
		Long: `Check the signatures of a payload image. PULLSPEC is by digest, or by tag: a tag is resolved
to its digest through the registry first (said on stderr) and that digest is verified. --key is
a file or an http(s) URL (the server serves its keys at /signatures/pubkey.asc and
/signatures/cosign.pub).

--format openpgp (the default) checks the simple signing signatures: PULLSPEC is verified when
at least one signature of its manifest digest in --store was made by a key of --key
(ASCII-armored public keys) and names that digest and PULLSPEC's repository. --store is a
signature store URL (file:///path, s3://, gs://, azblob://) or the base URL of a signatures
server (http://127.0.0.1:8080/signatures).

--format sigstore checks the Sigstore signatures attached to the image in its registry (the
sha256-<hex>.sig tag and Sigstore bundles among its referrers), as cosign verify does, with the
PEM public key --key (the server's cosign.pub); it prints a line for each valid signature.

--format attestation checks the signed in-toto attestations attached to the image: each
--predicate-type (default: the SLSA provenance, the test results and the verification summary)
must have one made by --key; it prints each one found, and the verification summary's
verificationResult.

The error says why each signature does not count. Of a payload built for platforms, --platform
verifies the platform's image (the one a consumer that pulls that platform meets) instead of
the image index; both are signed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := planVerify(format, storeURL, predicateTypes)
			if err != nil {
				return err
			}
			if err := checkPlatformFlag(platform); err != nil {
				return err
			}
			ctx := cmd.Context()
			keyData, err := readKey(ctx, keyRef)
			if err != nil {
				return err
			}
			reg := registryclient.New()
			if plan.Format != formatOpenPGP {
				image, err := resolveImage(ctx, reg, args[0], platform, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				return verifySigstore(ctx, cmd.OutOrStdout(), plan, image, keyData, keyRef, reg)
			}
			keyring, err := signing.ParsePublicKeys(keyData)
			if err != nil {
				return fmt.Errorf("--key %s: %w", keyRef, err)
			}
			if keyring.Len() == 0 {
				return fmt.Errorf("--key %s holds no public key", keyRef)
			}
			source, err := signstore.OpenSource(ctx, storeURL)
			if err != nil {
				return err
			}
			defer source.Close()
			res, err := signing.VerifyPayload(ctx, args[0], signing.VerifyPayloadOptions{
				Keyring:    keyring,
				Signatures: source,
				Registry:   reg,
				Platform:   platform,
			})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "verified: %s signed by %s (%d of %d signatures valid)\n",
				res.Image, res.KeyID, res.Valid, res.Total)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", formatOpenPGP, "what to verify: openpgp (simple signing in a signature store), sigstore (signatures in the registry) or attestation (in-toto attestations in the registry)")
	f.StringVar(&keyRef, "key", "", "the public keys to trust, a file or an http(s) URL: ASCII-armored OpenPGP keys for openpgp, a PEM public key (cosign.pub) for sigstore and attestation")
	f.StringVar(&storeURL, "store", "", "for openpgp: signature store URL or signatures server base URL")
	f.StringSliceVar(&predicateTypes, "predicate-type", nil, "for attestation: a predicate type that must be attested (repeatable; default: "+strings.Join(defaultPredicateTypes, ", ")+")")
	f.StringVar(&platform, "platform", "", "of a payload built for platforms, verify the image of this platform (os/arch or os/arch/variant)")
	_ = cmd.MarkFlagRequired("key")
	return cmd
}

// checkPlatformFlag refuses a --platform that is not os/arch[/variant] before anything is read,
// so a typo is named as one rather than reported as a platform the payload lacks.
func checkPlatformFlag(platform string) error {
	if platform == "" {
		return nil
	}
	if _, err := releaseimage.ParsePlatform(platform); err != nil {
		return fmt.Errorf("--platform: %w", err)
	}
	return nil
}
