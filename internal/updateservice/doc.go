// Package updateservice decides what the update service (/graph) offers clusters beyond
// OSRC's simple graph: which upgrade edges carry a risk (UpgradeRisk objects and, where a
// stream opts in, the risks the controller sees itself), which are blocked for everyone,
// which payloads each declared channel holds at a given time (feeders with delays), and what
// a tombstone withdraws. It is pure: it reads catalog snapshots and returns values, and the
// HTTP handlers (internal/server/osrc, internal/server/web) encode them.
package updateservice
