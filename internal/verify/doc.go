// Package verify launches a payload's verifications: it decides which runs are due (first
// runs, retries after a backoff, aggregated runs, upgrade runs and where they start from) and
// builds the Job or ProwJob for each. Every decision is a pure function; the stream controller
// creates the objects. Names, labels and annotations of the runs are the job contract's
// (package jobcontract).
package verify
