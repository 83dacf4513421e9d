package devenv

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/internal/releaselog"
)

// LogKeyNamespace holds the release log key of the environment: a namespace of the
// controller's own, as on a cluster, not the demo's, where the log and its writers are.
const LogKeyNamespace = "release-controller-system"

// releaseLogKey returns the key that seals the release log's entries, made on the first start
// and kept in its Secret (in etcd, in the data directory) for the next.
func releaseLogKey(ctx context.Context, c client.Client) ([]byte, error) {
	if err := ensureNamespace(ctx, c, LogKeyNamespace); err != nil {
		return nil, err
	}
	return releaselog.EnsureKey(ctx, c, types.NamespacedName{Namespace: LogKeyNamespace, Name: releaselog.DefaultKeySecret})
}
