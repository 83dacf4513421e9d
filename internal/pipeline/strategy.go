package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/pipeline/signature"
)

// FieldManager is the field manager of the patch strategy's server-side applies: a promotion
// shows in the app objects' managedFields under this name.
const FieldManager = "release-controller"

// patchTarget is one app object the patch strategy sets the revision in.
type patchTarget struct {
	writer client.Client
	// current is the object as the cache has it (a Deployment's image is rewritten from it).
	current *unstructured.Unstructured
	name    string // for messages: cluster:namespace
}

// patchConcurrency is how many targets of an environment applyRevision patches at once.
const patchConcurrency = 8

// applyRevision sets revision in every target by server-side apply (field manager
// release-controller, forced: the promotion owns the field from now on), patchConcurrency
// targets at once so that an environment is promoted in about one round trip. Applying the
// same revision again changes nothing, so a retried promotion is harmless. It returns the
// objects as the API server answered (nil where a target failed), in the targets' order.
func applyRevision(ctx context.Context, app App, targets []patchTarget, revision string) ([]*unstructured.Unstructured, error) {
	applied := make([]*unstructured.Unstructured, len(targets))
	errs := make([]error, len(targets))
	var g errgroup.Group
	g.SetLimit(patchConcurrency)
	for i, t := range targets {
		g.Go(func() error {
			applied[i], errs[i] = applyTarget(ctx, app, t, revision)
			return nil
		})
	}
	_ = g.Wait() // every error is in errs, in the targets' order
	return applied, errors.Join(errs...)
}

func applyTarget(ctx context.Context, app App, t patchTarget, revision string) (*unstructured.Unstructured, error) {
	if t.current == nil {
		return nil, fmt.Errorf("%s: %s %s not found", t.name, app.GVK.Kind, app.Name)
	}
	obj, err := app.PromotionObject(t.current, revision)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	// The API server's answer, the whole object, replaces obj.
	if err := t.writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("%s: applying revision %s to %s %s: %w", t.name, revision, app.GVK.Kind, app.Name, err)
	}
	return obj, nil
}

// PromotionEvent is the JSON body the notification strategy POSTs.
type PromotionEvent struct {
	// ID identifies the promotion: a receiver that sees it twice (a retry) acts once.
	ID          string                `json:"id"`
	Pipeline    PipelineRef           `json:"pipeline"`
	Environment string                `json:"environment"`
	Revision    string                `json:"revision"`
	App         v1alpha1.AppReference `json:"app"`
	Targets     []v1alpha1.Target     `json:"targets"`
	Approver    string                `json:"approver,omitempty"`
	Time        time.Time             `json:"time"`
}

// PipelineRef names a pipeline.
type PipelineRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Notifier sends promotion events.
type Notifier struct {
	HTTP *http.Client
	// Backoff spaces the attempts of a delivery that failed for a reason a retry may cure
	// (network, 5xx, 408, 429).
	Backoff wait.Backoff
	Now     func() time.Time
}

// DefaultNotifyBackoff is four attempts over about 3.5 seconds; a delivery that still fails
// makes the promotion fail, which the controller retries with its own backoff.
var DefaultNotifyBackoff = wait.Backoff{Steps: 4, Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1}

// NewNotifier returns a notifier with a 10-second timeout per attempt.
func NewNotifier() *Notifier {
	return &Notifier{HTTP: &http.Client{Timeout: 10 * time.Second}, Backoff: DefaultNotifyBackoff, Now: time.Now}
}

// Notify POSTs ev to target as JSON, signed with key when there is one (the headers of
// package signature, over signature.NotificationDomain and the URL's path), retrying with
// backoff.
func (n *Notifier) Notify(ctx context.Context, target string, key []byte, ev PromotionEvent) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("notification url: %w", err)
	}
	var last error
	err = wait.ExponentialBackoffWithContext(ctx, n.Backoff, func(ctx context.Context) (bool, error) {
		retry, err := n.post(ctx, u, key, ev.ID, body)
		if err == nil {
			return true, nil
		}
		last = err
		if !retry {
			return false, err
		}
		return false, nil
	})
	if wait.Interrupted(err) && last != nil {
		return fmt.Errorf("notifying %s: %w", u.Redacted(), last)
	}
	if err != nil {
		return fmt.Errorf("notifying %s: %w", u.Redacted(), err)
	}
	return nil
}

// post makes one attempt; retry says whether another may succeed.
func (n *Notifier) post(ctx context.Context, u *url.URL, key []byte, id string, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Release-Controller-Event", "promotion")
	req.Header.Set("X-Release-Controller-Delivery", id)
	if len(key) > 0 {
		ts := n.Now().UTC().Format(time.RFC3339)
		req.Header.Set(signature.HeaderTimestamp, ts)
		// Signed for notifications (signature.NotificationDomain), never as an approval: a
		// notification aimed at the approval route is not an approval.
		req.Header.Set(signature.HeaderSignature, signature.NotificationHeader(key, http.MethodPost, u.EscapedPath(), ts, body))
	}
	resp, err := n.HTTP.Do(req)
	if err != nil {
		return true, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests:
		return true, fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return false, fmt.Errorf("the receiver answered %s", resp.Status)
}
