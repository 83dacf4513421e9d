package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/release-controller/release-controller/internal/changelog"
)

// defaultChangeLogCacheSize bounds the clones changelogs are computed from.
var defaultChangeLogCacheSize = resource.MustParse("10Gi")

// changelogFlags configure changelogs: in `api` and `dev` for the pages and APIs, in
// `payload changelog` for one changelog.
type changelogFlags struct {
	cacheDir   string
	cacheSize  byteSize
	secret     string
	hosts      []string
	allow      []string
	allowCIDRs []string
	maxFetch   byteSize
	failureTTL time.Duration
}

// addCacheFlags adds --changelog-cache-dir, --changelog-cache-size and --git-source-allow;
// defaultDir is said in the help.
func (f *changelogFlags) addCacheFlags(fs *pflag.FlagSet, defaultDir string) {
	fs.StringVar(&f.cacheDir, "changelog-cache-dir", "", "folder of the git clones changelogs are read from, owned by the cache: a new or empty folder, or one it made (default "+defaultDir+")")
	f.cacheSize = byteSize(defaultChangeLogCacheSize.Value())
	fs.Var(&f.cacheSize, "changelog-cache-size", "most disk space the clones take, in bytes or as a quantity such as 500Mi or 20Gi (0: no bound); the least recently used clones are deleted beyond it")
	fs.StringSliceVar(&f.allow, "git-source-allow", changelog.DefaultSourceAllow, "the only repositories changelogs clone, whatever a component image's source label says: schemes (https://, file://), hosts (github.com, any scheme) or URL prefixes (https://git.example.com/org/); any other source is refused and its changelog section says why")
	fs.StringSliceVar(&f.allowCIDRs, "changelog-allow-cidrs", nil, "addresses besides the public internet's that changelog fetches may connect to, as CIDRs (10.0.0.0/8, fd00::/8) or addresses (127.0.0.1): loopback, link-local, private (RFC 1918, unique local), shared (100.64.0.0/10), unspecified and multicast addresses are refused otherwise, checked on each connection after DNS resolution")
	f.maxFetch = byteSize(changelog.DefaultMaxFetchBytes)
	fs.Var(&f.maxFetch, "changelog-max-fetch-size", "most a clone or fetch of one repository may receive, in bytes or as a quantity such as 500Mi (0: no bound); beyond it the fetch is aborted and the changelog says the repository is too large")
	fs.DurationVar(&f.failureTTL, "changelog-failure-ttl", changelog.DefaultFailureTTL, "how long a repository that could not be fetched is not tried again (its changelog section says why meanwhile)")
}

// addFlags adds the cache flags and the credentials of private repositories.
func (f *changelogFlags) addFlags(fs *pflag.FlagSet, defaultDir string) {
	f.addCacheFlags(fs, defaultDir)
	fs.StringVar(&f.secret, "git-credentials-secret", "", "NAMESPACE/NAME of a Secret with the credential of private repositories: the key token (with an optional username), or ssh-privatekey (with optional known_hosts, passphrase and username). Read once at start: restart to pick up a change")
	fs.StringSliceVar(&f.hosts, "git-credentials-hosts", []string{"github.com"}, "hosts (github.com) or URL prefixes (https://git.example.com/org/) of the repositories that get the credential of --git-credentials-secret; no other repository gets it")
}

// config is the changelog configuration, the cache in dir unless --changelog-cache-dir says
// otherwise.
func (f *changelogFlags) config(dir string) changelog.Config {
	if f.cacheDir != "" {
		dir = f.cacheDir
	}
	maxFetch := int64(f.maxFetch)
	if maxFetch == 0 {
		maxFetch = -1 // the flag's 0 is no bound; the option's is the default
	}
	failureTTL := f.failureTTL
	if failureTTL == 0 {
		failureTTL = -1 // not remembered
	}
	return changelog.Config{CacheDir: dir, CacheSize: int64(f.cacheSize), CredentialsSecret: f.secret, CredentialsHosts: f.hosts, SourceAllow: f.allow,
		AllowCIDRs: f.allowCIDRs, MaxFetchBytes: maxFetch, FailureTTL: failureTTL}
}

// userCacheDir is the clone cache of `api` and `payload changelog` outside the data dir:
// release-controller/git in the user's cache folder (the temporary folder without one).
func userCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "release-controller", "git")
}

// byteSize is a flag of bytes given as a number or a Kubernetes quantity (500Mi, 20Gi).
type byteSize int64

func (b *byteSize) String() string {
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("want bytes or a quantity such as 500Mi or 20Gi: %w", err)
	}
	if q.Sign() < 0 {
		return fmt.Errorf("want a size of zero or more, got %s", s)
	}
	*b = byteSize(q.Value())
	return nil
}

func (b *byteSize) Type() string { return "size" }
