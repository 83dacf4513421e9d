package assemble

// The RBAC of `release-controller api` (config/rbac/api/role.yaml) is generated from the
// markers of the packages it alone runs: this one, internal/catalog (the informers of streams,
// payloads and upgrade graphs) and internal/server/... (TokenReview and SubjectAccessReview
// in releaseapi). The release log's package also serves the controller, so the api's use of it
// is declared here, where New builds its writer:
//
//   - the log's store (logcontroller.SetupStoreWithManager) watches the days: list, watch;
//   - AddRelease writes through releaselog.Writer, which creates the day or appends to it with
//     a patch, and reads it from the API server after losing a race to another writer (get).
//
// +kubebuilder:rbac:groups=release-controller.dev,resources=releaselogs,verbs=get;list;watch;create;patch
//
// The api reads one Secret of its own, --git-credentials-secret (the changelog's git
// credentials, read once at start), and only in its own namespace: a Role there, not the
// ClusterRole, so the API server cannot read any tenant's Secret (docs/security.md,
// "Permissions of each Deployment"). An install that moves the api elsewhere moves the Role
// with it (kustomize's namespace, the chart's release namespace).
//
// +kubebuilder:rbac:groups="",namespace=release-controller-system,resources=secrets,verbs=get
