package approval_test

import (
	"testing"

	"github.com/release-controller/release-controller/internal/server/approval"
)

// The reject command the pages and MCP show: the approve command's, with the reason to fill in
// before the "--" that keeps a revision from being read as a flag.
func TestRejectCommand(t *testing.T) {
	for _, tc := range []struct {
		name, base, revision, want string
	}{
		{name: "with the server", base: "https://rc.example.com", revision: "1.2.0",
			want: "release-controller pipeline reject --server https://rc.example.com apps/web prod 1.2.0 --reason REASON"},
		{name: "without", revision: "1.2.0", want: "release-controller pipeline reject apps/web prod 1.2.0 --reason REASON"},
		{name: "a revision a shell would misread is quoted", revision: "1.2.0 $(x)'",
			want: `release-controller pipeline reject apps/web prod '1.2.0 $(x)'\''' --reason REASON`},
		{name: "a revision read as a flag follows --, the reason before it", revision: "-rc1",
			want: "release-controller pipeline reject --reason REASON -- apps/web prod -rc1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := approval.RejectCommand(tc.base, "apps", "web", "prod", tc.revision); got != tc.want {
				t.Errorf("RejectCommand = %q, want %q", got, tc.want)
			}
		})
	}
}
