package changelog

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/release-controller/release-controller/internal/secreturl"
)

// Secret data keys understood by CredentialFromSecretData.
const (
	SecretKeyToken         = "token"
	SecretKeyUsername      = "username"
	SecretKeySSHPrivateKey = "ssh-privatekey" // as in kubernetes.io/ssh-auth Secrets
	SecretKeyKnownHosts    = "known_hosts"
	SecretKeyPassphrase    = "passphrase"
)

// Credential authenticates to private repositories. Exactly one of Token and SSHPrivateKey is
// set.
type Credential struct {
	// Token is sent as the password of HTTP basic auth (as GitHub and GitLab accept for
	// personal access and installation tokens). Username defaults to "x-access-token".
	Token    string
	Username string
	// SSHPrivateKey is a PEM private key for ssh:// and scp-like (git@host:org/repo) URLs;
	// the SSH user is Username, defaulting to "git".
	SSHPrivateKey []byte
	Passphrase    string
	// KnownHosts, in OpenSSH known_hosts format, verifies the server's host key. Without it
	// go-git's default applies (SSH_KNOWN_HOSTS or ~/.ssh/known_hosts).
	KnownHosts []byte
	// Secret (NAMESPACE/NAME) is the Secret the credential was read from, and Annotations its
	// annotations: the credential goes only to the URLs they allow (secreturl.Check).
	Secret      string
	Annotations map[string]string
}

// CredentialFromSecretData builds a Credential from a Kubernetes Secret's data: either the key
// "token" (with an optional "username"), or "ssh-privatekey" (with optional "known_hosts",
// "passphrase" and "username").
func CredentialFromSecretData(data map[string][]byte) (Credential, error) {
	token := strings.TrimSpace(string(data[SecretKeyToken]))
	key := data[SecretKeySSHPrivateKey]
	c := Credential{Username: strings.TrimSpace(string(data[SecretKeyUsername]))}
	switch {
	case token != "" && len(key) > 0:
		return Credential{}, fmt.Errorf("secret has both %q and %q; use one", SecretKeyToken, SecretKeySSHPrivateKey)
	case token != "":
		c.Token = token
	case len(key) > 0:
		c.SSHPrivateKey = key
		c.KnownHosts = data[SecretKeyKnownHosts]
		c.Passphrase = string(data[SecretKeyPassphrase])
		// Validate the key now rather than at the first fetch.
		if _, err := c.sshAuth(); err != nil {
			return Credential{}, err
		}
	default:
		return Credential{}, fmt.Errorf("secret has neither %q nor %q", SecretKeyToken, SecretKeySSHPrivateKey)
	}
	return c, nil
}

// AuthMethod returns the go-git transport authentication for the credential.
func (c Credential) AuthMethod() (transport.AuthMethod, error) {
	switch {
	case c.Token != "":
		user := c.Username
		if user == "" {
			user = "x-access-token"
		}
		return &githttp.BasicAuth{Username: user, Password: c.Token}, nil
	case len(c.SSHPrivateKey) > 0:
		return c.sshAuth()
	}
	return nil, errors.New("empty credential")
}

func (c Credential) sshAuth() (*gitssh.PublicKeys, error) {
	user := c.Username
	if user == "" {
		user = "git"
	}
	keys, err := gitssh.NewPublicKeys(user, c.SSHPrivateKey, c.Passphrase)
	if err != nil {
		return nil, fmt.Errorf("parsing SSH private key: %w", err)
	}
	if len(c.KnownHosts) > 0 {
		// go-git reads known_hosts only from files; the callback keeps the parsed content,
		// so the temporary file can go at once.
		f, err := os.CreateTemp("", "changelog-known-hosts-")
		if err != nil {
			return nil, err
		}
		defer os.Remove(f.Name())
		_, werr := f.Write(c.KnownHosts)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, werr
		}
		cb, err := gitssh.NewKnownHostsCallback(f.Name())
		if err != nil {
			return nil, fmt.Errorf("parsing known_hosts: %w", err)
		}
		keys.HostKeyCallback = cb
	}
	return keys, nil
}

// Credentials chooses a Credential per repository URL. A key is either a host name
// ("github.com", matching every URL on that host whatever the scheme) or a URL prefix
// ("https://github.com/my-org/", matched against the source URL as written). The longest
// matching URL prefix wins, then the host.
type Credentials map[string]Credential

// For returns the credential for a repository URL, or false.
func (cs Credentials) For(repoURL string) (Credential, bool) {
	var prefixes []string
	for k := range cs {
		if strings.Contains(k, "://") && strings.HasPrefix(repoURL, k) {
			prefixes = append(prefixes, k)
		}
	}
	if len(prefixes) > 0 {
		sort.Slice(prefixes, func(i, j int) bool { return len(prefixes[i]) > len(prefixes[j]) })
		return cs[prefixes[0]], true
	}
	if ep, err := transport.NewEndpoint(repoURL); err == nil && ep.Host != "" {
		if c, ok := cs[ep.Host]; ok {
			return c, true
		}
	}
	return Credential{}, false
}

// authFor returns the transport auth for a URL; nil when no credential matches. A credential
// whose Secret does not allow the URL is an *CredentialRefusedError: nothing is fetched.
func (cs Credentials) authFor(repoURL string) (transport.AuthMethod, error) {
	c, ok := cs.For(repoURL)
	if !ok {
		return nil, nil
	}
	if err := secreturl.Check(c.Annotations, credentialTarget(repoURL)); err != nil {
		return nil, &CredentialRefusedError{Secret: c.Secret, URL: repoURL, Err: err}
	}
	return c.AuthMethod()
}

// credentialTarget is the URL the Secret's annotations are checked against: the source as
// written, but an ssh source (ssh:// or git@host:path) without its login name, which names
// the account and not where the credential goes.
func credentialTarget(repoURL string) string {
	ep, err := transport.NewEndpoint(repoURL)
	if err != nil || ep.Protocol != "ssh" {
		return repoURL
	}
	host := ep.Host
	if ep.Port != 0 {
		host = net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	p := ep.Path
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "ssh", Host: host, Path: p}).String()
}

// CredentialRefusedError is a source the git credentials Secret may not be sent to.
type CredentialRefusedError struct {
	Secret, URL string
	Err         error
}

func (e *CredentialRefusedError) Error() string {
	return fmt.Sprintf("the git credentials Secret %s (--git-credentials-secret) is not sent to %s: %v", e.Secret, e.URL, e.Err)
}

func (e *CredentialRefusedError) Unwrap() error { return e.Err }
