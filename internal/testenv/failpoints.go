package testenv

import (
	"context"
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// FailingClient is c (a manager's cache-backed client) with funcs in front of its calls, for
// the tests that walk a reconciler's failure points by making one call fail at a time.
func FailingClient(c client.Client, funcs interceptor.Funcs) client.WithWatch {
	return interceptor.NewClient(cacheClient{c}, funcs)
}

// cacheClient is a client.Client as the interceptor takes it: a client.WithWatch.
type cacheClient struct{ client.Client }

func (cacheClient) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("not watched through this client")
}

// Warnings takes the Events rec holds and returns the Warning ones ("Warning <reason> <note>").
func Warnings(rec *events.FakeRecorder) []string {
	var out []string
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.HasPrefix(e, "Warning ") {
			out = append(out, e)
		}
	}
	return out
}
