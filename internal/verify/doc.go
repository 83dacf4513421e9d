// Package verify launches verifications: it decides which runs are due (first runs, retries
// after a backoff, aggregated runs, upgrade runs and where they start from) and builds the Job
// or ProwJob for each, with the tenancy rules' checks. Every decision is a pure function; the
// stream controller creates a payload's runs, the pipeline controller an environment's
// (verification after rollout). Names, labels and annotations of the runs are the job
// contract's (package jobcontract).
package verify
