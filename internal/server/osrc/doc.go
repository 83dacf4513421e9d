// Package osrc serves the HTTP surface of the OpenShift release-controller (OSRC) from the
// catalog, so that the scripts and tools written against OSRC work unchanged: the same
// routes, query parameters, JSON shapes (field names, orders, null versus empty), status
// codes and error texts. docs/http-api.md lists every route with an example.
//
// Routes, all GET (and HEAD); any other method is answered 405:
//
//	/api/v1/releasestream/{stream}/latest          newest accepted tag (format, prefix, in, rel)
//	/api/v1/releasestream/{stream}/tags            every tag (phase, format)
//	/api/v1/releasestream/{stream}/release/{tag}   verification results, upgrades, changelog (format=short, from)
//	/api/v1/releasestream/{stream}/candidate       the newest promotion candidate
//	/api/v1/releasestream/{stream}/config          the stream's spec, or its verifications (jobType)
//	/api/v1/releasestreams/{accepted,rejected,ready,all}
//	/releasestream/{stream}/latest                 302 to /releasestream/{stream}/release/{tag}
//	/releasestream/{stream}/latest/download        302 to the artifacts URL of the latest tag
//	/releasestream/{stream}/release/{tag}/download 302 to the artifacts URL of the tag
//	/graph                                         the Cincinnati upgrade graph (format, channel, arch)
//	/archive/graph                                 the raw upgrade records, gzipped JSON
//
// Every /api/v1/releasestream/{stream}/… route also exists as
// /api/v1/namespaces/{namespace}/releasestream/{stream}/…, every /releasestream/{stream}/…
// page route as /namespaces/{namespace}/releasestream/{stream}/…, and the releasestreams
// lists as /api/v1/namespaces/{namespace}/releasestreams/…, limited to that namespace. A
// stream name found in two watched namespaces is answered 409 on the routes without a
// namespace, naming both.
//
// Every answer is read from the catalog's immutable snapshots, never from a List. The
// answers that read the whole catalog (/graph, the releasestreams lists) are kept until the
// catalog next changes; the large ones are encoded by hand to the bytes encoding/json
// would give.
//
// /graph is an update service (updates.go): the edges carrying an UpgradeRisk, or a risk a
// stream detects itself, are served as Cincinnati conditionalEdges (by version, never also in
// edges); a risk without matching rules and a tombstone remove edges; a stream that declares
// channels (spec.updateService) answers only those, with their members at the server's clock;
// nodes carry Cincinnati's metadata; Accept: application/vnd.redhat.cincinnati.v1+json gets
// that media type and "version": 1.
//
// Where our world differs from OSRC's (see DESIGN §10):
//   - phase is the payload's status.phase; pullSpec is <payloadRepository>:<tag>; /graph
//     nodes carry <payloadRepository>@<digest> from status.payloadImage; downloadURL is
//     <ArtifactsURL>/<tag>, or "" without an artifacts URL.
//   - Verification results: a verification's state Success reads "Succeeded", Skipped (an
//     upgrade with nothing to start from) "Succeeded" too, as OSRC's no-op jobs; Failure and
//     Unknown (results lost) read "Failed"; anything else "Pending". Every verification is
//     listed under blockingJobs or informingJobs by its type (OSRC leaves out those with no
//     result yet), and pendingJobs, which OSRC never fills, lists those not finished. A
//     success without a URL stays "Succeeded" (OSRC reports it Pending, a guard against its
//     own stale data). retries is the last attempt number minus one; an aggregated
//     verification's runs are not retries (retries 0), the other runs' URLs are still
//     listed in previousAttemptURLs. transitionTime is the last run's completion time.
//   - Upgrade history keys runs by URL, or by run name for runs without one.
//   - The previous tag of a changelog is ?from, else the newest older Accepted payload of the
//     stream, else the newest older payload (there is no stable stream to fall back to).
//   - Page order is semver order: our tags are semver, with the creation time in them.
//   - /config without jobType is the ReleaseStream's spec; with jobType, each verification in
//     OSRC's ReleaseVerification shape plus ours under "verification". An unknown jobType is
//     always 400 (OSRC lets it pass when the stream has no verifications).
//   - Release info's changeLog is, for now, the changelog's Markdown escaped in a <pre>: no
//     Markdown renderer is a dependency yet.
//   - There are no end-of-life streams, async jobs, periodics, disabled verifications or
//     node images: those parts of the answers stay empty.
package osrc
