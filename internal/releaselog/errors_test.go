package releaselog

import (
	"errors"
	"fmt"
	"testing"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		err  error
		want Kind
	}{
		{fmt.Errorf("%w: x", ErrTypeNotAllowed), KindInvalidArgument},
		{fmt.Errorf("%w: x", ErrInvalidEntry), KindInvalidArgument},
		{fmt.Errorf("%w: x", ErrDateInFuture), KindInvalidArgument},
		{fmt.Errorf("%w: x", ErrDateExpired), KindFailedPrecondition},
		{fmt.Errorf("%w: x", ErrDayFull), KindFailedPrecondition},
		{errors.New("connection refused"), KindInternal},
	}
	for _, tt := range tests {
		if got := KindOf(tt.err); got != tt.want {
			t.Errorf("KindOf(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestCheckRequired(t *testing.T) {
	tests := []struct {
		entry Entry
		want  string
	}{
		{Entry{Type: "release", Version: "1.0.0", Origin: "ci"}, ""},
		{Entry{Type: "release", Version: " ", Origin: "ci"}, "invalid entry: missing version"},
		{Entry{}, "invalid entry: missing type, version, origin"},
	}
	for _, tt := range tests {
		err := checkRequired(tt.entry)
		if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && got != tt.want) {
			t.Errorf("checkRequired(%+v) = %v, want %q", tt.entry, err, tt.want)
		}
	}
}
