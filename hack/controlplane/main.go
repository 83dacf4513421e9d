// Command controlplane puts kube-apiserver, etcd and kubectl into a folder for envtest
// (KUBEBUILDER_ASSETS), and with --node the node's components for the local cluster
// (kube-controller-manager, kube-scheduler, kubelet, kube-proxy). Where the machine can reach it, it downloads the prebuilt archive that
// controller-tools publishes for setup-envtest (found through its release index, checked
// against the index's SHA-512); when that fails for any reason it says so in one line and
// builds them from Go modules with hack/build-control-plane.sh, as on machines without
// internet. `make control-plane` runs it. The node's components come from Kubernetes' release
// downloads (dl.k8s.io), each checked against the SHA-512 published beside it, or are built
// the same way (`make node-binaries`).
//
//	go run ./hack/controlplane --version v1.37.1 --out bin/k8s/1.37.1-linux-amd64
//	go run ./hack/controlplane --node --version v1.37.1 --out bin/k8s/1.37.1-linux-amd64
//
// CONTROL_PLANE_DOWNLOAD=0 skips the download; CONTROL_PLANE_INDEX_URL names another index.
package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// DefaultIndexURL is setup-envtest's release index.
const DefaultIndexURL = "https://raw.githubusercontent.com/kubernetes-sigs/controller-tools/HEAD/envtest-releases.yaml"

// binaries are what envtest runs (etcd, kube-apiserver) and what `make run` users get (kubectl).
var binaries = []string{"etcd", "kube-apiserver", "kubectl"}

// nodeBinaries are the rest of the local cluster.
var nodeBinaries = []string{"kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"}

// DefaultReleaseURL is where Kubernetes publishes its binaries:
// <url>/<version>/bin/<os>/<arch>/<name>, with <name>.sha512 beside each.
const DefaultReleaseURL = "https://dl.k8s.io/release"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "control plane:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("controlplane", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.Version, "version", "", "Kubernetes version, e.g. v1.37.1")
	fs.StringVar(&o.Out, "out", "", "folder to put etcd, kube-apiserver and kubectl in")
	fs.StringVar(&o.IndexURL, "index", envOr("CONTROL_PLANE_INDEX_URL", DefaultIndexURL), "setup-envtest release index")
	fs.StringVar(&o.ReleaseURL, "release-url", envOr("NODE_RELEASE_URL", DefaultReleaseURL), "Kubernetes' release downloads (with --node)")
	fs.BoolVar(&o.Node, "node", false, "the node's components instead of the control plane")
	buildScript := fs.String("build-script", "hack/build-control-plane.sh", "builds the binaries from Go modules when the download fails")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Version == "" || o.Out == "" {
		return errors.New("--version and --out are required")
	}
	o.Download = os.Getenv("CONTROL_PLANE_DOWNLOAD") != "0"
	o.OS, o.Arch = runtime.GOOS, runtime.GOARCH
	o.Client = &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}}
	o.Log = out
	o.Build = func(ctx context.Context) error {
		args := []string{o.Out}
		if o.Node {
			args = append(args, "node")
		}
		cmd := exec.CommandContext(ctx, *buildScript, args...)
		cmd.Env = append(os.Environ(), "KUBE_VERSION="+o.Version)
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		return cmd.Run()
	}
	return ensure(ctx, o)
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

type options struct {
	Version  string // v1.37.1
	OS, Arch string
	Out      string
	IndexURL string
	// Node selects the node's components (nodeBinaries, from ReleaseURL).
	Node       bool
	ReleaseURL string
	Download   bool
	Client     *http.Client
	Log        io.Writer
	// Build makes the binaries from source: the fallback.
	Build func(context.Context) error
}

// what names the binaries o asks for, in messages.
func (o options) what() string {
	if o.Node {
		return "node components"
	}
	return "control plane"
}

func (o options) binaries() []string {
	if o.Node {
		return nodeBinaries
	}
	return binaries
}

// ensure leaves the binaries in o.Out: already there, downloaded, or built.
func ensure(ctx context.Context, o options) error {
	if present(o.Out, o.binaries()) {
		fmt.Fprintf(o.Log, "==> %s already in %s\n", o.what(), o.Out)
		return nil
	}
	if o.Download {
		fetch := download
		if o.Node {
			fetch = downloadNode
		}
		err := fetch(ctx, o)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		fmt.Fprintf(o.Log, "==> no prebuilt %s (%v); building from Go modules instead\n", o.what(), err)
	}
	return o.Build(ctx)
}

func present(dir string, names []string) bool {
	for _, name := range names {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// index is setup-envtest's release index: version → archive name → where and its SHA-512.
type index struct {
	Releases map[string]map[string]struct {
		Hash     string `json:"hash"`
		SelfLink string `json:"selfLink"`
	} `json:"releases"`
}

// download fetches the version's archive, checks its SHA-512 and unpacks the binaries into
// o.Out, all or nothing: nothing lands in o.Out unless every binary arrived intact.
func download(ctx context.Context, o options) error {
	version := "v" + strings.TrimPrefix(o.Version, "v")
	fmt.Fprintf(o.Log, "==> looking up prebuilt control plane %s for %s/%s in %s\n", version, o.OS, o.Arch, o.IndexURL)
	indexCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	body, err := get(indexCtx, o.Client, o.IndexURL)
	if err != nil {
		return fmt.Errorf("release index: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(body, 16<<20))
	body.Close()
	if err != nil {
		return fmt.Errorf("release index: %w", err)
	}
	var idx index
	if err := yaml.Unmarshal(raw, &idx); err != nil {
		return fmt.Errorf("release index: %w", err)
	}
	archiveName := fmt.Sprintf("envtest-%s-%s-%s.tar.gz", version, o.OS, o.Arch)
	archive, ok := idx.Releases[version][archiveName]
	if !ok {
		return fmt.Errorf("the release index has no %s", archiveName)
	}
	if archive.Hash == "" || archive.SelfLink == "" {
		return fmt.Errorf("the release index names %s without a hash or link", archiveName)
	}

	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return err
	}
	staging, err := os.MkdirTemp(filepath.Dir(o.Out), ".control-plane-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	tarball := filepath.Join(staging, archiveName)
	fmt.Fprintf(o.Log, "==> downloading %s\n", archive.SelfLink)
	if err := fetchChecked(ctx, o, archive.SelfLink, archive.Hash, tarball); err != nil {
		return err
	}
	if err := unpack(tarball, staging); err != nil {
		return fmt.Errorf("%s: %w", archiveName, err)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	for _, name := range binaries {
		if err := os.Rename(filepath.Join(staging, name), filepath.Join(o.Out, name)); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Log, "==> control plane %s in %s (SHA-512 checked)\n", version, o.Out)
	return nil
}

// downloadNode fetches each node binary from o.ReleaseURL and checks it against the SHA-512
// published beside it, all or nothing: nothing lands in o.Out unless every binary arrived
// intact.
func downloadNode(ctx context.Context, o options) error {
	version := "v" + strings.TrimPrefix(o.Version, "v")
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return err
	}
	staging, err := os.MkdirTemp(filepath.Dir(o.Out), ".node-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	for _, name := range nodeBinaries {
		url := fmt.Sprintf("%s/%s/bin/%s/%s/%s", strings.TrimSuffix(o.ReleaseURL, "/"), version, o.OS, o.Arch, name)
		sumCtx, cancel := context.WithTimeout(ctx, time.Minute)
		body, err := get(sumCtx, o.Client, url+".sha512")
		if err != nil {
			cancel()
			return err
		}
		raw, err := io.ReadAll(io.LimitReader(body, 4096))
		body.Close()
		cancel()
		if err != nil {
			return fmt.Errorf("%s.sha512: %w", url, err)
		}
		fields := strings.Fields(string(raw))
		if len(fields) == 0 || len(fields[0]) != 128 {
			return fmt.Errorf("%s.sha512 holds no SHA-512", url)
		}
		fmt.Fprintf(o.Log, "==> downloading %s\n", url)
		path := filepath.Join(staging, name)
		if err := fetchChecked(ctx, o, url, fields[0], path); err != nil {
			return err
		}
		if err := os.Chmod(path, 0o755); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	for _, name := range nodeBinaries {
		if err := os.Rename(filepath.Join(staging, name), filepath.Join(o.Out, name)); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Log, "==> node components %s in %s (SHA-512 checked)\n", version, o.Out)
	return nil
}

func get(ctx context.Context, client *http.Client, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// fetchChecked writes url to path, reporting progress, and fails unless the bytes have the
// SHA-512 wantHex.
func fetchChecked(ctx context.Context, o options, url, wantHex, path string) error {
	body, err := get(ctx, o.Client, url)
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sum := sha512.New()
	n, err := io.Copy(io.MultiWriter(f, sum, &progress{log: o.Log}), body)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", url, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); !strings.EqualFold(got, wantHex) {
		return fmt.Errorf("checksum mismatch for %s (%d bytes): SHA-512 %s, expected %s", url, n, got, wantHex)
	}
	return f.Close()
}

// progress prints a line every 16 MiB.
type progress struct {
	log  io.Writer
	n    int64
	next int64
}

func (p *progress) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if p.n >= p.next {
		if p.next > 0 {
			fmt.Fprintf(p.log, "    %d MiB\n", p.n>>20)
		}
		p.next = p.n + 16<<20
	}
	return len(b), nil
}

// unpack extracts the three binaries from the gzipped tarball into dir (the archives keep them
// under controller-tools/envtest/; only the base name counts) and fails unless all three are there.
func unpack(tarball, dir string) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	wanted := map[string]bool{}
	for _, name := range binaries {
		wanted[name] = true
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := filepath.Base(h.Name)
		if h.Typeflag != tar.TypeReg || !wanted[name] {
			continue
		}
		if err := writeExecutable(filepath.Join(dir, name), tr); err != nil {
			return err
		}
		delete(wanted, name)
	}
	for _, name := range binaries {
		if wanted[name] {
			return fmt.Errorf("no %s in the archive", name)
		}
	}
	return nil
}

func writeExecutable(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
