package changelog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// PayloadChangeLogs computes changelogs between two payloads, reading what each payload's
// image records about its components (source repository and revision).
type PayloadChangeLogs interface {
	// Cached returns the changelog of the pair when it was computed before, without waiting.
	Cached(from, to *v1alpha1.ReleasePayload) (*ChangeLog, bool)
	// ChangeLog computes the changelog (or returns the cached one); concurrent calls for one
	// pair compute it once.
	ChangeLog(ctx context.Context, from, to *v1alpha1.ReleasePayload) (*ChangeLog, error)
}

// PayloadsOptions configures Payloads.
type PayloadsOptions struct {
	// CacheSize bounds the payload images whose content is kept in memory, by digest
	// (default 1024; a payload of a thousand components takes a few hundred kilobytes).
	CacheSize int
	// Timeout bounds reading one payload image. Reads run detached from any single caller,
	// like the Generator's computations, so that a caller giving up does not fail the others
	// waiting on the same image (default 2 minutes).
	Timeout time.Duration
}

// Payloads is the PayloadChangeLogs of the server: it reads each payload's image
// (status.payloadImage, a pull spec by digest) once, keeps what it holds in an LRU by digest
// (images never change), and computes changelogs with a Generator.
type Payloads struct {
	gen      *Generator
	registry *registryclient.Client
	opts     PayloadsOptions
	group    singleflight.Group
	releases *lru.Cache // image digest → Release
}

var _ PayloadChangeLogs = (*Payloads)(nil)

// NewPayloadChangeLogs returns the changelogs of payloads computed by gen, reading payload
// images through registry (nil: registryclient.New()).
func NewPayloadChangeLogs(gen *Generator, registry *registryclient.Client, opts PayloadsOptions) *Payloads {
	if registry == nil {
		registry = registryclient.New()
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 1024
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	return &Payloads{gen: gen, registry: registry, opts: opts, releases: lru.New(opts.CacheSize)}
}

// Generator returns the generator the changelogs are computed with.
func (p *Payloads) Generator() *Generator { return p.gen }

// Cached returns the changelog of the pair from the generator's cache, by the digests of the
// two payload images, without any I/O.
func (p *Payloads) Cached(from, to *v1alpha1.ReleasePayload) (*ChangeLog, bool) {
	if from == nil || to == nil || from.Status.PayloadImage == "" || to.Status.PayloadImage == "" {
		return nil, false
	}
	return p.gen.Cached(imageDigest(from.Status.PayloadImage), imageDigest(to.Status.PayloadImage))
}

// ChangeLog returns the changelog from one payload to another. A payload without an image
// yet is an error; so is an image that cannot be read. Problems with single components
// (an unreachable repository, a rewritten history) are reported on the components.
func (p *Payloads) ChangeLog(ctx context.Context, from, to *v1alpha1.ReleasePayload) (*ChangeLog, error) {
	if from == nil || to == nil {
		return nil, errors.New("changelog: a payload is missing")
	}
	for _, rp := range []*v1alpha1.ReleasePayload{from, to} {
		if rp.Status.PayloadImage == "" {
			return nil, &NoImageError{Payload: rp.Name}
		}
	}
	if cl, ok := p.Cached(from, to); ok {
		return cl, nil
	}
	releases, err := bothReleases(ctx, func(ctx context.Context, rp *v1alpha1.ReleasePayload) (Release, error) {
		r, err := p.Release(ctx, rp.Status.PayloadImage)
		if err != nil {
			return Release{}, fmt.Errorf("reading the image of payload %s: %w", rp.Name, err)
		}
		return r, nil
	}, from, to)
	if err != nil {
		return nil, err
	}
	return p.gen.ChangeLog(ctx, releases[0], releases[1])
}

// ChangeLogOfImages returns the changelog from one payload image to another, given by pull
// spec (by tag or digest).
func (p *Payloads) ChangeLogOfImages(ctx context.Context, fromPullSpec, toPullSpec string) (*ChangeLog, error) {
	releases, err := bothReleases(ctx, p.Release, fromPullSpec, toPullSpec)
	if err != nil {
		return nil, err
	}
	return p.gen.ChangeLog(ctx, releases[0], releases[1])
}

// bothReleases reads the two sides at once; the errors of both are returned.
func bothReleases[T any](ctx context.Context, read func(context.Context, T) (Release, error), from, to T) ([2]Release, error) {
	var out [2]Release
	var errs [2]error
	var wg sync.WaitGroup
	for i, side := range []T{from, to} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = read(ctx, side)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs[0], errs[1])
}

// Release reads what a payload image holds. Images named by digest are read once and then
// answered from memory; a tag is resolved on every call (tags move) and its image cached
// by digest too.
func (p *Payloads) Release(ctx context.Context, pullSpec string) (Release, error) {
	_, digest, byDigest := strings.Cut(pullSpec, "@")
	if byDigest {
		if r, ok := p.cached(digest); ok {
			return r, nil
		}
	}
	ch := p.group.DoChan(pullSpec, func() (any, error) {
		if byDigest {
			if r, ok := p.cached(digest); ok {
				return r, nil
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.Timeout)
		defer cancel()
		info, err := releaseimage.Info(rctx, pullSpec, p.registry.Options(rctx)...)
		if err != nil {
			return nil, err
		}
		r := ReleaseFromPayload(info)
		p.add(r)
		return r, nil
	})
	select {
	case <-ctx.Done():
		return Release{}, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return Release{}, res.Err
		}
		return res.Val.(Release), nil
	}
}

func (p *Payloads) cached(digest string) (Release, bool) {
	v, ok := p.releases.Get(digest)
	if !ok {
		return Release{}, false
	}
	return v.(Release), true
}

func (p *Payloads) add(r Release) {
	if r.Digest == "" {
		return
	}
	p.releases.Add(r.Digest, r) // an image never changes: the same digest is the same Release
}

// Config is how a command sets up changelogs.
type Config struct {
	// CacheDir holds the clone cache (RepoCacheOptions.Dir); the cache owns the folder.
	CacheDir string
	// CacheSize bounds the clones' size on disk in bytes (RepoCacheOptions.MaxBytes); zero
	// means no bound.
	CacheSize int64
	// CredentialsSecret, NAMESPACE/NAME, names a Secret read with CredentialFromSecretData;
	// its credential goes to the repositories CredentialsHosts match (host names or URL
	// prefixes, see Credentials), and to no other.
	CredentialsSecret string
	CredentialsHosts  []string
	// SourceAllow is the git sources that may be cloned (see SourceAllowList); nil:
	// DefaultSourceAllow.
	SourceAllow []string
	// OnFetch reports clones and fetches (RepoCacheOptions.OnFetch).
	OnFetch func(url string, clone bool)
	// OnFetchError gets the whole error of failed fetches (RepoCacheOptions.OnFetchError);
	// nil: logged with controller-runtime's logger.
	OnFetchError func(url string, err error)
	// AllowCIDRs are the addresses besides the public internet's that fetches may dial
	// (CIDRs or addresses, see ParseCIDRs): loopback, private, link-local and the like are
	// refused otherwise.
	AllowCIDRs []string
	// MaxFetchBytes and FailureTTL: see RepoCacheOptions (zero: the defaults).
	MaxFetchBytes int64
	FailureTTL    time.Duration
	// Registry reads payload images; nil: registryclient.New().
	Registry *registryclient.Client
}

// Setup sets up changelogs from a command's configuration. The Secret, if any, is read once
// with reader.
func Setup(ctx context.Context, reader client.Reader, cfg Config) (*Payloads, error) {
	if cfg.CacheDir == "" {
		return nil, errors.New("changelog: no cache folder")
	}
	if cfg.SourceAllow == nil {
		cfg.SourceAllow = DefaultSourceAllow
	}
	allow, err := ParseSourceAllowList(cfg.SourceAllow)
	if err != nil {
		return nil, err
	}
	allowNets, err := ParseCIDRs(cfg.AllowCIDRs)
	if err != nil {
		return nil, fmt.Errorf("changelog: the addresses fetches may dial: %w", err)
	}
	creds, err := ReadCredentials(ctx, reader, cfg.CredentialsSecret, cfg.CredentialsHosts)
	if err != nil {
		return nil, err
	}
	if cfg.OnFetchError == nil {
		logger := log.Log.WithName("changelog")
		cfg.OnFetchError = func(url string, err error) {
			logger.Info("fetching a source repository failed", "url", url, "error", err.Error())
		}
	}
	if err := claimCacheDir(cfg.CacheDir); err != nil {
		return nil, err
	}
	repos, err := NewRepoCache(RepoCacheOptions{
		Dir: cfg.CacheDir, MaxBytes: cfg.CacheSize, Credentials: creds, Allow: allow, OnFetch: cfg.OnFetch, OnFetchError: cfg.OnFetchError,
		Network: NetworkPolicy{Allow: allowNets}, MaxFetchBytes: cfg.MaxFetchBytes, FailureTTL: cfg.FailureTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("opening the changelog cache %s: %w", cfg.CacheDir, err)
	}
	return NewPayloadChangeLogs(NewGenerator(repos, GeneratorOptions{}), cfg.Registry, PayloadsOptions{}), nil
}

// CacheMarker is the file that marks a folder as a clone cache of Setup.
const CacheMarker = ".release-controller-changelog-cache"

// claimCacheDir makes sure dir is a clone cache, or new or empty and then marked as one: a
// RepoCache deletes every folder in its directory that is not one of its clones, so a
// mistyped flag must not point it at a folder holding anything else.
func claimCacheDir(dir string) error {
	marker := filepath.Join(dir, CacheMarker)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("changelog cache %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("changelog cache %s: the folder holds other files; give a new or empty folder", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the changelog cache %s: %w", dir, err)
	}
	if err := os.WriteFile(marker, []byte("git clones of release-controller changelogs; the folder is managed by it\n"), 0o644); err != nil {
		return fmt.Errorf("creating the changelog cache %s: %w", dir, err)
	}
	return nil
}

// ReadCredentials reads the Secret NAMESPACE/NAME and returns its credential for the given
// hosts or URL prefixes. An empty secret gives no credentials.
func ReadCredentials(ctx context.Context, reader client.Reader, secret string, hosts []string) (Credentials, error) {
	if secret == "" {
		return nil, nil
	}
	namespace, name, ok := strings.Cut(secret, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("git credentials secret must be NAMESPACE/NAME, got %q", secret)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("git credentials secret %s: no hosts to send its credentials to", secret)
	}
	if reader == nil {
		return nil, fmt.Errorf("git credentials secret %s: no cluster to read it from", secret)
	}
	var s corev1.Secret
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		return nil, fmt.Errorf("reading the git credentials secret %s: %w", secret, err)
	}
	c, err := CredentialFromSecretData(s.Data)
	if err != nil {
		return nil, fmt.Errorf("git credentials secret %s: %w", secret, err)
	}
	c.Secret, c.Annotations = secret, s.Annotations
	creds := Credentials{}
	for _, h := range hosts {
		if h = strings.TrimSpace(h); h != "" {
			creds[h] = c
		}
	}
	return creds, nil
}
