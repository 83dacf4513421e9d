package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// envtestArchive is a gzipped tarball laid out as controller-tools publishes them, holding
// the named files (name → content).
func envtestArchive(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	dir := &tar.Header{Name: "controller-tools/envtest/", Typeflag: tar.TypeDir, Mode: 0o755}
	if err := tw.WriteHeader(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range binaries {
		content, ok := files[name]
		if !ok {
			continue
		}
		h := &tar.Header{Name: "controller-tools/envtest/" + name, Typeflag: tar.TypeReg, Mode: 0o555, Size: int64(len(content))}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha512Hex(b []byte) string {
	sum := sha512.Sum512(b)
	return hex.EncodeToString(sum[:])
}

// releaseServer serves a setup-envtest index with one version whose archive is archive, listed
// with hash; it counts the archive downloads.
func releaseServer(t *testing.T, version string, archive []byte, hash string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var downloads atomic.Int32
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	name := fmt.Sprintf("envtest-%s-%s-%s.tar.gz", version, runtime.GOOS, runtime.GOARCH)
	mux.HandleFunc("GET /envtest-releases.yaml", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "releases:\n  %s:\n    %s:\n      hash: %s\n      selfLink: %s/download/%s\n", version, name, hash, srv.URL, name)
	})
	mux.HandleFunc("GET /download/"+name, func(w http.ResponseWriter, _ *http.Request) {
		downloads.Add(1)
		_, _ = w.Write(archive)
	})
	return srv, &downloads
}

var allThree = map[string]string{"etcd": "#!/bin/sh\necho etcd\n", "kube-apiserver": "#!/bin/sh\necho apiserver\n", "kubectl": "#!/bin/sh\necho kubectl\n"}

func TestEnsure(t *testing.T) {
	good := envtestArchive(t, allThree)
	noKubectl := envtestArchive(t, map[string]string{"etcd": "e", "kube-apiserver": "a"})
	cases := []struct {
		name        string
		version     string // in the index
		archive     []byte
		hash        string
		download    bool
		preinstall  bool
		wantBuilt   bool
		wantLog     string
		wantContent bool // the archive's binaries are in place
	}{
		{name: "download", version: "v1.37.1", archive: good, hash: sha512Hex(good), download: true, wantLog: "SHA-512 checked", wantContent: true},
		{name: "upper-case hash", version: "v1.37.1", archive: good, hash: strings.ToUpper(sha512Hex(good)), download: true, wantContent: true},
		{name: "checksum mismatch", version: "v1.37.1", archive: good, hash: sha512Hex([]byte("something else")), download: true, wantBuilt: true, wantLog: "checksum mismatch"},
		{name: "version not in the index", version: "v1.36.0", archive: good, hash: sha512Hex(good), download: true, wantBuilt: true, wantLog: "has no envtest-v1.37.1-"},
		{name: "archive without kubectl", version: "v1.37.1", archive: noKubectl, hash: sha512Hex(noKubectl), download: true, wantBuilt: true, wantLog: "no kubectl in the archive"},
		{name: "download turned off", version: "v1.37.1", archive: good, hash: sha512Hex(good), wantBuilt: true},
		{name: "already there", version: "v1.37.1", archive: good, hash: sha512Hex(good), download: true, preinstall: true, wantLog: "already in"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, downloads := releaseServer(t, tc.version, tc.archive, tc.hash)
			out := filepath.Join(t.TempDir(), "k8s", "1.37.1")
			if tc.preinstall {
				writeBinaries(t, out, "preinstalled")
			}
			var log bytes.Buffer
			built := false
			err := ensure(context.Background(), options{
				Version: "1.37.1", OS: runtime.GOOS, Arch: runtime.GOARCH, Out: out,
				IndexURL: srv.URL + "/envtest-releases.yaml", Download: tc.download,
				Client: srv.Client(), Log: &log,
				Build: func(context.Context) error { built = true; writeBinaries(t, out, "built"); return nil },
			})
			if err != nil {
				t.Fatalf("ensure: %v\n%s", err, &log)
			}
			if built != tc.wantBuilt {
				t.Errorf("built from source = %v, want %v; log:\n%s", built, tc.wantBuilt, &log)
			}
			if !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("log does not say %q:\n%s", tc.wantLog, &log)
			}
			if !tc.download && downloads.Load() != 0 {
				t.Errorf("downloaded %d times with the download turned off", downloads.Load())
			}
			for _, name := range binaries {
				b, err := os.ReadFile(filepath.Join(out, name))
				if err != nil {
					t.Fatal(err)
				}
				if tc.wantContent && string(b) != allThree[name] {
					t.Errorf("%s = %q, want the archive's %q", name, b, allThree[name])
				}
				if !tc.wantContent && string(b) == allThree[name] {
					t.Errorf("%s came from the archive although the download should not be used", name)
				}
			}
			leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".control-plane-*"))
			if len(leftovers) != 0 {
				t.Errorf("staging folders left behind: %v", leftovers)
			}
		})
	}
}

func writeBinaries(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range binaries {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunFallsBackToTheBuildScript runs the command as make does, with an index that cannot be
// reached: it names the failure in one line and runs the build script with KUBE_VERSION set.
func TestRunFallsBackToTheBuildScript(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewServer(http.NotFoundHandler())
	unreachable := srv.URL + "/envtest-releases.yaml"
	srv.Close()
	script := filepath.Join(dir, "build.sh")
	body := "#!/bin/sh\nset -e\nmkdir -p \"$1\"\nfor b in etcd kube-apiserver kubectl; do printf '%s\\n' \"$KUBE_VERSION\" > \"$1/$b\"; chmod +x \"$1/$b\"; done\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "k8s")
	t.Setenv("CONTROL_PLANE_DOWNLOAD", "")
	var log bytes.Buffer
	err := run(context.Background(), []string{"--version", "v1.37.1", "--out", out, "--index", unreachable, "--build-script", script}, &log)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, &log)
	}
	if !strings.Contains(log.String(), "building from Go modules instead") {
		t.Errorf("no fallback notice in:\n%s", &log)
	}
	b, err := os.ReadFile(filepath.Join(out, "kube-apiserver"))
	if err != nil || string(b) != "v1.37.1\n" {
		t.Errorf("kube-apiserver = %q, %v; want the build script's output for v1.37.1", b, err)
	}
}

// nodeReleaseServer serves the node binaries as dl.k8s.io lays them out, each with its
// .sha512; sums overrides a binary's published checksum.
func nodeReleaseServer(t *testing.T, version string, files, sums map[string]string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for name, content := range files {
		path := fmt.Sprintf("/release/%s/bin/%s/%s/%s", version, runtime.GOOS, runtime.GOARCH, name)
		sum, ok := sums[name]
		if !ok {
			sum = sha512Hex([]byte(content))
		}
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(content)) })
		mux.HandleFunc("GET "+path+".sha512", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "%s  %s\n", sum, name) })
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestEnsureNode(t *testing.T) {
	all := map[string]string{}
	for _, name := range nodeBinaries {
		all[name] = "#!/bin/sh\necho " + name + "\n"
	}
	withoutProxy := map[string]string{}
	for name, content := range all {
		if name != "kube-proxy" {
			withoutProxy[name] = content
		}
	}
	cases := []struct {
		name      string
		files     map[string]string
		sums      map[string]string
		wantBuilt bool
		wantLog   string
	}{
		{name: "download", files: all, wantLog: "node components v1.37.1 in"},
		{name: "checksum mismatch", files: all, sums: map[string]string{"kubelet": sha512Hex([]byte("other"))}, wantBuilt: true, wantLog: "checksum mismatch"},
		{name: "not published", files: withoutProxy, wantBuilt: true, wantLog: "kube-proxy.sha512: 404"},
		{name: "no checksum in the file", files: all, sums: map[string]string{"kube-scheduler": ""}, wantBuilt: true, wantLog: "holds no SHA-512"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := nodeReleaseServer(t, "v1.37.1", tc.files, tc.sums)
			out := filepath.Join(t.TempDir(), "k8s", "1.37.1")
			var log bytes.Buffer
			built := false
			err := ensure(context.Background(), options{
				Version: "1.37.1", OS: runtime.GOOS, Arch: runtime.GOARCH, Out: out, Node: true,
				ReleaseURL: srv.URL + "/release", Download: true, Client: srv.Client(), Log: &log,
				Build: func(context.Context) error {
					built = true
					for _, name := range nodeBinaries {
						if err := os.MkdirAll(out, 0o755); err != nil {
							return err
						}
						if err := os.WriteFile(filepath.Join(out, name), []byte("built"), 0o755); err != nil {
							return err
						}
					}
					return nil
				},
			})
			if err != nil {
				t.Fatalf("ensure: %v\n%s", err, &log)
			}
			if built != tc.wantBuilt {
				t.Errorf("built from source = %v, want %v; log:\n%s", built, tc.wantBuilt, &log)
			}
			if !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("log does not say %q:\n%s", tc.wantLog, &log)
			}
			for _, name := range nodeBinaries {
				b, err := os.ReadFile(filepath.Join(out, name))
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]string{true: "built", false: all[name]}[tc.wantBuilt]; string(b) != want {
					t.Errorf("%s = %q, want %q", name, b, want)
				}
				if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Mode()&0o111 == 0 {
					t.Errorf("%s is not executable: %v", name, err)
				}
			}
			if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".node-*")); len(leftovers) != 0 {
				t.Errorf("staging folders left behind: %v", leftovers)
			}
		})
	}
}
