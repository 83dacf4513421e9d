// Package monitoring holds the tests of the shipped monitoring: the Prometheus alerting
// rules and the Grafana dashboard of config/components/alerts, and their copies in the
// chart (charts/release-controller/files). The rules must pass Prometheus' own rule-file
// validation (what promtool check rules runs), and every metric the rules and the dashboard
// name must be one the release-controller binary registers.
package monitoring
