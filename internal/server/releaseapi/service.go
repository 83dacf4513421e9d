// Package releaseapi serves the release log's Connect API, releasecontroller.v1.ReleaseService,
// on the project's HTTP server. One handler speaks the Connect protocol (JSON or binary), gRPC
// and gRPC-Web. Reads come from the in-memory release log store and are open to everyone;
// AddRelease needs a bearer token of a caller whom Kubernetes RBAC allows to create
// releaselogs/entries, records that caller as the entry's author, and seals the entry (the
// release log key), so readers tell it from one written directly into a ReleaseLog object.
package releaseapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	releasecontrollerv1 "github.com/release-controller/release-controller/internal/gen/releasecontroller/v1"
	"github.com/release-controller/release-controller/internal/gen/releasecontroller/v1/releasecontrollerv1connect"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/releaseapi/paging"
)

// Page sizes of ListReleases.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// MaxRequestBytes bounds a request's message: the largest legitimate one is an AddRelease
// with a long message, far below this; anything bigger is refused with resource_exhausted
// before it is decoded.
const MaxRequestBytes = 1 << 20

// Service implements ReleaseService.
type Service struct {
	store   *releaselog.Store
	writer  *releaselog.Writer
	auth    *Authorizer
	ttlDays int32
	types   []*releasecontrollerv1.ReleaseType
}

var _ releasecontrollerv1connect.ReleaseServiceHandler = (*Service)(nil)

// NewService returns the service reading store, writing through writer, and asking auth
// (required) who may write. opts gives the time to live and the entry types that ListReleaseDays reports; use
// the options the writer and the controllers were given.
func NewService(store *releaselog.Store, writer *releaselog.Writer, opts releaselog.Options, auth *Authorizer) *Service {
	opts = opts.WithDefaults("")
	s := &Service{
		store:  store,
		writer: writer,
		auth:   auth,
		// A day is kept for TTL from its start; a partial day still shows, so round up.
		ttlDays: int32((opts.TTL + 24*time.Hour - 1) / (24 * time.Hour)),
	}
	for _, t := range opts.Types {
		s.types = append(s.types, &releasecontrollerv1.ReleaseType{Name: t.Name, Color: t.Color})
	}
	return s
}

// Register mounts svc at the server's root, under /releasecontroller.v1.ReleaseService/, so a
// method is POST /releasecontroller.v1.ReleaseService/<Method> in every protocol.
func Register(s *server.Server, svc *Service) {
	path, h := releasecontrollerv1connect.NewReleaseServiceHandler(svc, connect.WithReadMaxBytes(MaxRequestBytes))
	// The body may hold a gRPC envelope (5 bytes) around the message; a body over the limit is
	// refused in the caller's protocol (resource_exhausted), not with a bare 413.
	s.Handle(path, h, server.MaxBodyBytes(MaxRequestBytes+64), server.OwnTooLargeErrors())
}

// ListReleases returns a page of one day's entries, oldest first.
func (s *Service) ListReleases(_ context.Context, req *connect.Request[releasecontrollerv1.ListReleasesRequest]) (*connect.Response[releasecontrollerv1.ListReleasesResponse], error) {
	msg := req.Msg
	size, err := pageSize(msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	day := msg.GetDay()
	if day != "" {
		if err := paging.CheckDay(day); err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, err)
		}
	}
	offset := 0
	if msg.GetPageToken() != "" {
		tokenDay, tokenOffset, err := paging.DecodeToken(msg.GetPageToken())
		if err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, err)
		}
		if day != "" && day != tokenDay {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("the page token pages through %s, not %s", tokenDay, day))
		}
		// With no day, the token's day is the one to go on with: the latest day may have
		// changed since the first page.
		day, offset = tokenDay, tokenOffset
	}
	if day == "" {
		latest, ok := s.store.Latest()
		if !ok {
			// An empty log is no error: there is simply nothing to list yet.
			return connect.NewResponse(&releasecontrollerv1.ListReleasesResponse{}), nil
		}
		day = latest
	}
	if !s.store.Has(day) {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("the release log has no entries on %s", day))
	}
	page, total := s.store.Page(day, offset, size)
	resp := &releasecontrollerv1.ListReleasesResponse{
		Day:      day,
		Releases: make([]*releasecontrollerv1.Release, 0, len(page)),
		Total:    int32(total),
	}
	for _, e := range page {
		resp.Releases = append(resp.Releases, toProto(e))
	}
	if end := offset + len(page); end < total {
		resp.NextPageToken = paging.EncodeToken(day, end)
	}
	resp.PreviousDay, resp.NextDay = s.store.Adjacent(day)
	return connect.NewResponse(resp), nil
}

// ListReleaseDays returns the days with entries, newest first, and the log's settings.
func (s *Service) ListReleaseDays(context.Context, *connect.Request[releasecontrollerv1.ListReleaseDaysRequest]) (*connect.Response[releasecontrollerv1.ListReleaseDaysResponse], error) {
	return connect.NewResponse(&releasecontrollerv1.ListReleaseDaysResponse{
		Days:    s.store.Days(),
		TtlDays: s.ttlDays,
		Types:   s.types,
	}), nil
}

// AddRelease adds an entry for a caller RBAC allows to add entries (create
// releaselogs/entries). The entry's author is always the caller, the username of the bearer
// token: nobody writes in someone else's name. An author the request names that is not the
// caller (a CI system writing for a person) is kept as the entry's reported author, display
// text beside the real one.
func (s *Service) AddRelease(ctx context.Context, req *connect.Request[releasecontrollerv1.AddReleaseRequest]) (*connect.Response[releasecontrollerv1.AddReleaseResponse], error) {
	// Authorization comes first: an unauthorized caller learns nothing about the log, not
	// even what it would have said of the entry.
	user, err := s.auth.Authorize(ctx, req.Header().Get("Authorization"))
	if err != nil {
		return nil, err
	}
	r := req.Msg.GetRelease()
	if r == nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("release is required"))
	}
	reported, err := reportedAuthor(r, user)
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	e := releaselog.Entry{
		Type: r.GetType(), Version: r.GetVersion(), Origin: r.GetOrigin(),
		Author: user, ReportedAuthor: reported, Message: r.GetMessage(), Link: r.GetLink(),
	}
	if r.GetDate() != nil {
		if err := r.GetDate().CheckValid(); err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("release.date: %w", err))
		}
		e.Date = r.GetDate().AsTime()
	}
	day, err := s.writer.AddRelease(ctx, e)
	if err != nil {
		return nil, writeError(err)
	}
	return connect.NewResponse(&releasecontrollerv1.AddReleaseResponse{Day: day}), nil
}

// MaxReportedAuthorLength bounds a reported author, in characters (the ReleaseLog's bound).
const MaxReportedAuthorLength = 128

// reportedAuthor is the author r names for the entry user writes: its reported_author, else
// its author unless that is user; empty when it names user or nobody.
func reportedAuthor(r *releasecontrollerv1.Release, user string) (string, error) {
	field, reported := "release.reported_author", strings.TrimSpace(r.GetReportedAuthor())
	if reported == "" {
		field, reported = "release.author", strings.TrimSpace(r.GetAuthor())
	}
	if reported == user {
		return "", nil
	}
	if n := utf8.RuneCountInString(reported); n > MaxReportedAuthorLength {
		return "", fmt.Errorf("%s is %d characters long, more than the %d a reported author may have", field, n, MaxReportedAuthorLength)
	}
	return reported, nil
}

// writeError gives an error of the writer its Connect code.
func writeError(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	switch releaselog.KindOf(err) {
	case releaselog.KindInvalidArgument:
		return connect.NewError(connect.CodeInvalidArgument, err)
	case releaselog.KindFailedPrecondition:
		return connect.NewError(connect.CodeFailedPrecondition, err)
	}
	return connect.NewError(connect.CodeInternal, err)
}

// pageSize applies the default to an unset page size and refuses one out of range.
func pageSize(requested int32) (int, error) {
	switch {
	case requested == 0:
		return DefaultPageSize, nil
	case requested < 0 || requested > MaxPageSize:
		return 0, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("page_size must be between 1 and %d, not %d", MaxPageSize, requested))
	}
	return int(requested), nil
}

func toProto(e releaselog.Entry) *releasecontrollerv1.Release {
	return &releasecontrollerv1.Release{
		Type: e.Type, Version: e.Version, Origin: e.Origin, Date: timestamppb.New(e.Date),
		Author: e.ShownAuthor(), Verified: e.Verified, Message: e.Message, Link: e.Link, ReportedAuthor: e.ReportedAuthor,
	}
}
