// Package verdict decides a payload's verdict from its evidence: each verification's state
// from its runs, and the conditions PayloadCreated, PayloadFailed, PayloadAccepted and
// PayloadRejected (and so the phase) from the creation job's result, the override, an abort
// and the verifications' states. Every function is pure.
//
// The payload controller writes the verdict; every other part (publishing, signing, Jira, the
// release log, promotion, the APIs) reads it. The package is a leaf so that all of them judge
// a payload the same way.
package verdict
