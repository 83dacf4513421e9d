package approval_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/approval"
)

func TestRecordSignature(t *testing.T) {
	now := time.Date(2026, 3, 25, 12, 0, 0, 0, time.UTC)
	entry := func(n int, expires time.Time) v1alpha1.UsedSignature {
		return v1alpha1.UsedSignature{SHA256: fmt.Sprintf("%064x", n), Expires: metav1.NewTime(expires)}
	}
	full := make([]v1alpha1.UsedSignature, v1alpha1.MaxUsedApprovalSignatures)
	for i := range full {
		full[i] = entry(i+1, now.Add(time.Duration(i+1)*time.Second))
	}
	tests := []struct {
		name     string
		used     []v1alpha1.UsedSignature
		digest   string
		want     []string // digests kept, in order
		wantCode int
	}{
		{name: "first", digest: "a", want: []string{"a"}},
		{name: "kept within the window", used: []v1alpha1.UsedSignature{entry(1, now.Add(time.Minute))}, digest: "a",
			want: []string{fmt.Sprintf("%064x", 1), "a"}},
		{name: "pruned past the window", used: []v1alpha1.UsedSignature{entry(1, now.Add(-time.Second)), entry(2, now)}, digest: "a",
			want: []string{fmt.Sprintf("%064x", 2), "a"}},
		{name: "a replay", used: []v1alpha1.UsedSignature{entry(1, now.Add(time.Minute))}, digest: fmt.Sprintf("%064x", 1), wantCode: http.StatusConflict},
		{name: "a replay of an entry past the window is not one (the window refuses it)", used: []v1alpha1.UsedSignature{entry(1, now.Add(-time.Second))},
			digest: fmt.Sprintf("%064x", 1), want: []string{fmt.Sprintf("%064x", 1)}},
		{name: "full", used: full, digest: "a", wantCode: http.StatusTooManyRequests},
		{name: "full but one past the window", used: append([]v1alpha1.UsedSignature{entry(0, now.Add(-time.Second))}, full[1:]...), digest: "a",
			want: append(digests(full[1:]), "a")},
		{name: "a bearer approval keeps the record, pruned", used: []v1alpha1.UsedSignature{entry(1, now.Add(-time.Second)), entry(2, now.Add(time.Minute))},
			want: []string{fmt.Sprintf("%064x", 2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := approval.RecordSignature(tt.used, tt.digest, now.Add(5*time.Minute), now)
			if tt.wantCode != 0 {
				if err == nil {
					t.Fatalf("RecordSignature = %v; want a refusal", got)
				}
				if code := approval.StatusOf(err); code != tt.wantCode {
					t.Errorf("refused with %d (%v), want %d", code, err, tt.wantCode)
				}
				if tt.wantCode == http.StatusTooManyRequests && !strings.Contains(err.Error(), "usedSignatures") {
					t.Errorf("the refusal does not name the field: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := digests(got); strings.Join(d, ",") != strings.Join(tt.want, ",") {
				t.Errorf("kept %v, want %v", d, tt.want)
			}
			if tt.digest != "" && got[len(got)-1].Expires.Time.Before(now.Add(5*time.Minute)) {
				t.Errorf("the new entry expires %v, before its window ends", got[len(got)-1].Expires)
			}
		})
	}
}

func digests(used []v1alpha1.UsedSignature) []string {
	out := make([]string, len(used))
	for i, u := range used {
		out[i] = u.SHA256
	}
	return out
}
