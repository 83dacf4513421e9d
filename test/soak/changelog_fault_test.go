//go:build !unit

package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/testbinary"
)

// TestFaultChangelogCache (fault case 8): the changelog cache's folder becomes unwritable (a
// file takes its place) before a payload's changelog is first asked for. The release page and
// the REST release info still answer, and the changelog says why each component's history is
// missing; once the folder is back, asking again gives the changelog.
func TestFaultChangelogCache(t *testing.T) {
	dir, binary, assets := buildDev(t)
	dataDir := filepath.Join(dir, "data")
	cache := filepath.Join(dir, "changelog-cache")
	listen := freeAddr(t)
	dev, err := testbinary.Start(binary, filepath.Join(dir, "dev.log"), "dev", "--data-dir", dataDir,
		"--listen", listen, "--control-plane-bin", assets, "--build-interval", "24h", "--changelog-cache-dir", cache)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Stop(time.Minute) })
	base := "http://" + listen

	// Two accepted payloads: the demo's first, and one more after a new build of api.
	waitAcceptedTags(t, dev, base, binary, dataDir, 1)
	if out, err := exec.Command(binary, "dev", "bump", "--data-dir", dataDir, "api").CombinedOutput(); err != nil {
		t.Fatalf("dev bump api: %v\n%s", err, out)
	}
	second := waitAcceptedTags(t, dev, base, binary, dataDir, 2)[0]

	away := cache + ".away"
	if err := os.Rename(cache, away); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cache, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := time.Now()
	infoURL := base + "/api/v1/releasestream/nightly/release/" + second
	var errorsWhileBroken []string
	waitUntil(t, dev, "the changelog says why it is missing", func() (bool, string) {
		status, body := get(t, infoURL)
		if status != http.StatusOK {
			return false, fmt.Sprintf("release info answered %d: %s", status, body)
		}
		errorsWhileBroken = componentErrors(t, body)
		return len(errorsWhileBroken) > 0, changeLogPart(body)
	})
	pageURL := base + "/namespaces/demo/releasestream/nightly/release/" + second
	status, page := get(t, pageURL)
	if status != http.StatusOK || !strings.Contains(page, "repository unavailable") {
		t.Errorf("the release page answered %d without the changelog's error:\n%s", status, page[:min(len(page), 2000)])
	}

	if err := os.Remove(cache); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, cache); err != nil {
		t.Fatal(err)
	}
	restored := time.Now()
	waitUntil(t, dev, "the changelog is back", func() (bool, string) {
		status, body := get(t, infoURL)
		return status == http.StatusOK && len(componentErrors(t, body)) == 0 && strings.Contains(body, `"commits"`), changeLogPart(body)
	})
	fmt.Printf("FAULT changelog-cache broken_s=%.1f component_errors=%d converge_s=%.1f said=%q\n",
		restored.Sub(broken).Seconds(), len(errorsWhileBroken), time.Since(restored).Seconds(), errorsWhileBroken[0])
}

// componentErrors reads the images' errors from a release info answer's changeLogJson.
func componentErrors(t testing.TB, body string) []string {
	t.Helper()
	type image struct {
		Name  string `json:"name"`
		Error string `json:"error"`
	}
	var info struct {
		ChangeLogJSON struct {
			New     []image `json:"newImages"`
			Rebuilt []image `json:"rebuiltImages"`
			Updated []image `json:"updatedImages"`
		} `json:"changeLogJson"`
	}
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatalf("release info is no JSON: %v\n%s", err, body)
	}
	var out []string
	for _, list := range [][]image{info.ChangeLogJSON.New, info.ChangeLogJSON.Rebuilt, info.ChangeLogJSON.Updated} {
		for _, c := range list {
			if c.Error != "" {
				out = append(out, c.Name+": "+c.Error)
			}
		}
	}
	return out
}

// changeLogPart is the changelog's part of a release info answer, for reports.
func changeLogPart(body string) string {
	if i := strings.Index(body, `"changeLogJson"`); i >= 0 {
		body = body[i:]
	}
	return body[:min(len(body), 1500)]
}

// get fetches url and returns its status and body.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// waitUntil polls cond every second until it holds, for at most 5 minutes (a bound, no
// measurement), failing with cond's last report or when dev exits.
func waitUntil(t testing.TB, dev *testbinary.Process, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if !dev.Running() {
			t.Fatalf("dev exited: %s; the end of its log:\n%s", dev.ExitStatus(), dev.Tail(30))
		}
		ok, report := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within 5 minutes; last: %s", what, report)
		}
		time.Sleep(time.Second)
	}
}

// waitAcceptedTags waits until the demo stream has n accepted payloads and returns their tags,
// newest first. The demo's flaky check can fail every retry: then it publishes another build
// of worker, as a user would.
func waitAcceptedTags(t testing.TB, dev *testbinary.Process, base, binary, dataDir string, n int) []string {
	t.Helper()
	var tags []string
	rejected := -1
	waitUntil(t, dev, fmt.Sprintf("%d accepted payloads", n), func() (bool, string) {
		accepted, seen := phaseTags(base, "Accepted"), len(phaseTags(base, "Rejected"))
		if rejected >= 0 && seen > rejected {
			_ = exec.Command(binary, "dev", "bump", "--data-dir", dataDir, "worker").Run()
		}
		rejected, tags = seen, accepted
		return len(accepted) >= n, fmt.Sprintf("accepted %v, %d rejected", accepted, seen)
	})
	return tags
}

// phaseTags lists the demo stream's tags in phase, newest first (nil while it cannot tell).
func phaseTags(base, phase string) []string {
	body, err := testbinary.Get(context.Background(), base+"/api/v1/releasestream/nightly/tags?phase="+phase)
	if err != nil {
		return nil
	}
	var answer struct {
		Tags []struct{ Name string } `json:"tags"`
	}
	if json.Unmarshal([]byte(body), &answer) != nil {
		return nil
	}
	var tags []string
	for _, tag := range answer.Tags {
		tags = append(tags, tag.Name)
	}
	return tags
}
