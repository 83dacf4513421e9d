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
