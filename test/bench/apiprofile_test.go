package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/rest"
)

// apiServerProfile is a CPU profile of the API server over a window, split by what its time
// went to: the controller's writes (payload status updates, release log patches, Events),
// the Job status writes (the benchmark's, standing in for the Job controller), garbage
// collection, and the rest (watch fan-out, reads, background work).
type apiServerProfile struct {
	start, end           time.Time
	ours, jobs, gc, rest time.Duration
	total                time.Duration
	err                  error
}

// Where a CPU sample's stack says its time went. A write's work runs partly in the request's
// goroutine and partly in the one finishRequest starts; both carry these names. Custom
// resources' handlers are closures of the CRD handler (…crdHandler).serveStatus.UpdateResource…),
// built-in resources' the generic handlers (handlers.UpdateResource…, job storage).
var (
	ourWrites = []string{
		"crdHandler).serveStatus", "crdHandler).serveResource.UpdateResource", "crdHandler).serveResource.PatchResource",
		"crdHandler).serveResource.CreateResource", "customresource.(*StatusREST).Update", "customresource.(*REST).Update",
		"handlers.PatchResource", "handlers.(*patcher)", "handlers.createHandler", "createHandler.func",
	}
	jobWrites = []string{"batch/job/storage", "restfulUpdateResource", "handlers.UpdateResource"}
	gcWork    = []string{"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.bgsweep"}
)

// profileAPIServer takes a CPU profile of the API server for the next seconds (it serves
// /debug/pprof to its admin, --profiling being on by default), in the background.
// The profile is kept in file, for `go tool pprof`.
func profileAPIServer(cfg *rest.Config, seconds int, file string) <-chan apiServerProfile {
	out := make(chan apiServerProfile, 1)
	go func() {
		p := apiServerProfile{start: time.Now()}
		defer func() { out <- p }()
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			p.err = err
			return
		}
		hc.Timeout = time.Duration(seconds+60) * time.Second
		resp, err := hc.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimRight(cfg.Host, "/"), seconds))
		if err != nil {
			p.err = err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			p.err = fmt.Errorf("%s: %s", resp.Status, body)
			return
		}
		data, err := io.ReadAll(resp.Body)
		p.end = time.Now()
		if err != nil {
			p.err = err
			return
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			p.err = err
			return
		}
		prof, err := profile.ParseData(data)
		if err != nil {
			p.err = err
			return
		}
		p.attribute(prof)
	}()
	return out
}

// attribute splits the profile's CPU samples by the first of these its stack holds.
func (p *apiServerProfile) attribute(prof *profile.Profile) {
	cpu := slices.IndexFunc(prof.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" })
	if cpu < 0 {
		cpu = len(prof.SampleType) - 1
	}
	for _, s := range prof.Sample {
		d := time.Duration(s.Value[cpu])
		p.total += d
		switch {
		case stackHasAny(s, ourWrites):
			p.ours += d
		case stackHasAny(s, jobWrites):
			p.jobs += d
		case stackHasAny(s, gcWork):
			p.gc += d
		default:
			p.rest += d
		}
	}
}

// stackHasAny reports whether a function of the sample's stack has one of fns in its name.
func stackHasAny(s *profile.Sample, fns []string) bool {
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			for _, fn := range fns {
				if strings.Contains(line.Function.Name, fn) {
					return true
				}
			}
		}
	}
	return false
}

// perPayload divides a duration by the payloads whose jobs were finished within the
// profile's window, in milliseconds.
func (p apiServerProfile) perPayload(d time.Duration, lastJobDone []time.Time) float64 {
	n := 0
	for _, t := range lastJobDone {
		if !t.Before(p.start) && !t.After(p.end) {
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / 1000 / float64(n)
}
