//go:build !unit

package cosign

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/signing/cosign/cosigntest"
)

// BenchmarkSignPayload measures what the audit controller does for one accepted payload, on a
// registry with the referrers API and on one with the referrers tag only: sign the image and
// attach six attestations (a provenance, four test results, a verification summary, as the
// demo's payloads have), then the same again, as after a restart, which finds everything and
// writes nothing. It reports each one's p50 and p99.
func BenchmarkSignPayload(b *testing.B) {
	ctx := context.Background()
	s := testSigner(b)
	for _, reg := range registries(b) {
		b.Run(reg.name, func(b *testing.B) {
			var first, again []time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				image := cosigntest.PushRandom(b, fmt.Sprintf("%s/bench/release:%d", reg.host, i))
				var stmts [][]byte
				for predicate, st := range statements(b, image) {
					stmts = append(stmts, st)
					if predicate == predicateTestResult {
						for n := range 3 {
							stmts = append(stmts, statement(b, image, predicateTestResult, map[string]any{
								"result": "PASSED", "configuration": []any{map[string]any{"name": fmt.Sprintf("e2e-%d", n)}}}))
						}
					}
				}
				b.StartTimer()
				for round := range 2 {
					start := time.Now()
					if _, err := EnsureSigned(ctx, image, image.Repository.Name()+":bench", s); err != nil {
						b.Fatal(err)
					}
					for _, st := range stmts {
						created, err := EnsureAttested(ctx, image, st, s)
						if err != nil {
							b.Fatal(err)
						}
						if created != (round == 0) {
							b.Fatalf("round %d: created = %v", round, created)
						}
					}
					if round == 0 {
						first = append(first, time.Since(start))
					} else {
						again = append(again, time.Since(start))
					}
				}
			}
			report(b, "sign", first)
			report(b, "again", again)
		})
	}
}

func report(b *testing.B, what string, d []time.Duration) {
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, what+"-p50-ms")
	b.ReportMetric(float64(d[(len(d)*99)/100].Microseconds())/1000, what+"-p99-ms")
}
