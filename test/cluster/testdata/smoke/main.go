// Command smoke is the app and the verification of the real-node rollback test
// (rollback_test.go): `smoke serve -status N` answers every HTTP request on :8080 with status
// N, a release that runs (its pod is ready) but is broken when N is not 200; `smoke check -url
// URL` gets URL and exits 1 unless it answers 200, the verification after rollout that tells
// them apart. It is built static, like the cluster's pause program, and runs as the image's
// entrypoint.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: smoke serve -status N | smoke check -url URL")
		os.Exit(2)
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	switch os.Args[1] {
	case "serve":
		status := flags.Int("status", http.StatusOK, "the status every request is answered with")
		_ = flags.Parse(os.Args[2:])
		server := &http.Server{Addr: ":8080", ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(*status)
			fmt.Fprintf(w, "status %d\n", *status)
		})}
		fmt.Fprintln(os.Stderr, server.ListenAndServe())
		os.Exit(1)
	case "check":
		url := flags.String("url", "", "what to get")
		_ = flags.Parse(os.Args[2:])
		c := http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get(*url)
		if err != nil {
			fmt.Println("smoke test failed:", err)
			os.Exit(1)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fmt.Printf("smoke test failed: %s answered %s\n", *url, resp.Status)
			os.Exit(1)
		}
		fmt.Printf("smoke test passed: %s answered %s\n", *url, resp.Status)
	default:
		fmt.Fprintln(os.Stderr, "usage: smoke serve -status N | smoke check -url URL")
		os.Exit(2)
	}
}
