package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
)

// addLogKeyFlag adds --release-log-key-secret, which the controller and the api share: both
// seal the entries they write with the key, and the api checks every entry's seal.
func addLogKeyFlag(f *pflag.FlagSet, secret *string) {
	f.StringVar(secret, "release-log-key-secret", releaselog.DefaultKeySecret, "NAME (in the pod's own namespace; \"default\" outside a pod) or NAMESPACE/NAME of the Secret whose data."+releaselog.KeySecretKey+" is the release log key, which seals the entries written through the release controller so that readers can tell them from entries written directly into a ReleaseLog; made with a random key when missing. Keep it out of tenants' reach: the controller's and the api's namespace")
}

// logKeySecret is the Secret --release-log-key-secret names.
func logKeySecret(flag string) (types.NamespacedName, error) {
	namespace, name, found := strings.Cut(flag, "/")
	if !found {
		namespace, name = "default", flag
		// The namespace alone is enough (POD_NAMESPACE, or the service account's).
		if pod, _ := manager.OwnPod(); pod.Namespace != "" {
			namespace = pod.Namespace
		}
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 || len(validation.IsDNS1123Label(namespace)) > 0 {
		return types.NamespacedName{}, fmt.Errorf("--release-log-key-secret %q: want NAME or NAMESPACE/NAME", flag)
	}
	return types.NamespacedName{Namespace: namespace, Name: name}, nil
}

// keyRetryInterval spaces the attempts to read the release log key.
const keyRetryInterval = 2 * time.Second

// releaseLogKey reads the release log key from the Secret flag names, making it when missing.
// It tries again until it succeeds or ctx ends, as the controllers do with what they cannot
// reach yet: the API server may be down, or the Role that lets this process read the Secret
// not in force yet (a fresh install). A Secret that holds too short a key is an error.
func releaseLogKey(ctx context.Context, cfg *rest.Config, flag string) ([]byte, error) {
	ref, err := logKeySecret(flag)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		return nil, err
	}
	var key []byte
	err = wait.PollUntilContextCancel(ctx, keyRetryInterval, true, func(ctx context.Context) (bool, error) {
		key, err = releaselog.EnsureKey(ctx, c, ref)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, releaselog.ErrShortKey):
			return false, err
		}
		ctrl.LoggerFrom(ctx).Error(err, "reading the release log key; trying again", "secret", ref.String(), "in", keyRetryInterval)
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the release log key (Secret %s, --release-log-key-secret): %w", ref, err)
	}
	return key, nil
}
