// Command pause is the local cluster's pod sandbox process, built here because no image is
// ever pulled from the internet: as the first process of a pod's sandbox it waits for
// SIGINT or SIGTERM and reaps the zombies handed to it.
//
// The same static binary is the tests' smallest workload: `pause -sleep 20s -exit 1` sleeps,
// then exits with the code given, and `pause -print TEXT` writes TEXT to stdout first.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	sleep := flag.Duration("sleep", 0, "exit after this long instead of waiting for a signal")
	code := flag.Int("exit", 0, "the exit code after -sleep")
	text := flag.String("print", "", "written to stdout at start")
	flag.Parse()
	if *text != "" {
		fmt.Println(*text)
	}

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	var deadline <-chan time.Time
	if *sleep > 0 {
		deadline = time.After(*sleep)
	}
	for {
		select {
		case <-deadline:
			os.Exit(*code)
		case s := <-signals:
			if s == syscall.SIGCHLD {
				reap()
				continue
			}
			os.Exit(0)
		}
	}
}

// reap collects every exited child, as the first process of a PID namespace must.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
