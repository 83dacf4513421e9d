package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	releasecontrollerv1 "github.com/release-controller/release-controller/internal/gen/releasecontroller/v1"
	"github.com/release-controller/release-controller/internal/gen/releasecontroller/v1/releasecontrollerv1connect"
	"github.com/release-controller/release-controller/internal/kubeclient"
)

// logClientFlags are how the log commands reach the API server and who they are.
type logClientFlags struct {
	server, token, tokenFile, kubeconfig string
}

func (f *logClientFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.server, "server", "http://127.0.0.1:8080", "URL of the release-controller API server")
	cmd.Flags().StringVar(&f.token, "token", "", "bearer token for writes; default: the kubeconfig's token")
	cmd.Flags().StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token (release-controller dev writes one)")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig whose token to use; default: $KUBECONFIG, the in-cluster service account, then ~/.kube/config")
}

func (f *logClientFlags) client() releasecontrollerv1connect.ReleaseServiceClient {
	return releasecontrollerv1connect.NewReleaseServiceClient(http.DefaultClient, strings.TrimSuffix(f.server, "/"))
}

// bearerToken is --token, else --token-file, else the kubeconfig's token; "" when none.
func (f *logClientFlags) bearerToken() (string, error) {
	if f.token != "" {
		return f.token, nil
	}
	if f.tokenFile != "" {
		data, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return "", fmt.Errorf("reading --token-file: %w", err)
		}
		return strings.TrimSpace(string(data)), nil
	}
	cfg, err := kubeclient.Options{Kubeconfig: f.kubeconfig}.Config()
	if err != nil {
		return "", nil //nolint:nilerr // no kubeconfig: the server says a token is needed
	}
	if cfg.BearerToken != "" {
		return cfg.BearerToken, nil
	}
	if cfg.BearerTokenFile != "" {
		data, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(data)), nil
	}
	return "", nil
}

func newLogCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Read and write the release log through the API server",
	}
	cmd.AddCommand(newLogAddCommand(), newLogListCommand())
	return cmd
}

func newLogAddCommand() *cobra.Command {
	var flags logClientFlags
	var entry releasecontrollerv1.Release
	var date string
	cmd := &cobra.Command{
		Use:   "add --type TYPE --version VERSION [--message TEXT]",
		Short: "Add an entry to the release log (needs a token RBAC allows to create releaselogs/entries)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if date != "" {
				t, err := time.Parse(time.RFC3339, date)
				if err != nil {
					return fmt.Errorf("--date must be RFC 3339, e.g. 2026-11-22T09:30:00Z: %w", err)
				}
				entry.Date = timestamppb.New(t)
			}
			token, err := flags.bearerToken()
			if err != nil {
				return err
			}
			req := connect.NewRequest(&releasecontrollerv1.AddReleaseRequest{Release: &entry})
			if token != "" {
				req.Header().Set("Authorization", "Bearer "+token)
			}
			resp, err := flags.client().AddRelease(cmd.Context(), req)
			if err != nil {
				return explainLogError(err, token == "")
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added %s %s to the release log of %s\n", entry.GetType(), entry.GetVersion(), resp.Msg.GetDay())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&entry.Type, "type", "", "entry type, e.g. release, hotfix, promotion (required)")
	f.StringVar(&entry.Version, "version", "", "version released (required)")
	f.StringVar(&entry.Message, "message", "", "what happened")
	f.StringVar(&entry.Origin, "origin", "cli", "who or what reports it")
	f.StringVar(&entry.ReportedAuthor, "author", "", "who the entry is written for, when not you: shown beside the author, which is always the authenticated user, as reported (not verified)")
	f.StringVar(&entry.Link, "link", "", "an http(s) URL with more")
	f.StringVar(&date, "date", "", "when it happened (RFC 3339); default: now")
	_ = cmd.MarkFlagRequired("type")
	_ = cmd.MarkFlagRequired("version")
	flags.bind(cmd)
	return cmd
}

func newLogListCommand() *cobra.Command {
	var flags logClientFlags
	var day string
	cmd := &cobra.Command{
		Use:   "list [--day YYYY-MM-DD]",
		Short: "List a day of the release log (default: the newest day)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listDay(cmd.Context(), flags.client(), day, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&day, "day", "", "day to list, YYYY-MM-DD")
	flags.bind(cmd)
	return cmd
}

// listDay prints every page of a day.
func listDay(ctx context.Context, c releasecontrollerv1connect.ReleaseServiceClient, day string, out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	token := ""
	for first := true; first || token != ""; first = false {
		resp, err := c.ListReleases(ctx, connect.NewRequest(&releasecontrollerv1.ListReleasesRequest{Day: day, PageSize: 500, PageToken: token}))
		if err != nil {
			return explainLogError(err, false)
		}
		msg := resp.Msg
		if first {
			if msg.GetDay() == "" {
				fmt.Fprintln(out, "The release log is empty.")
				return nil
			}
			fmt.Fprintf(out, "%s: %d entries (previous day: %s, next day: %s)\n\n", msg.GetDay(), msg.GetTotal(), orNone(msg.GetPreviousDay()), orNone(msg.GetNextDay()))
			fmt.Fprintln(tw, "TIME\tTYPE\tVERSION\tAUTHOR\tMESSAGE\tLINK")
		}
		day, token = msg.GetDay(), msg.GetNextPageToken()
		for _, r := range msg.GetReleases() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.GetDate().AsTime().UTC().Format("15:04:05"), r.GetType(), r.GetVersion(),
				orNone(authorText(r)), orNone(r.GetMessage()), orNone(r.GetLink()))
		}
	}
	return tw.Flush()
}

// authorText is the entry's author, with whom the writer said it wrote for.
func authorText(r *releasecontrollerv1.Release) string {
	if reported := r.GetReportedAuthor(); reported != "" {
		return r.GetAuthor() + " (for " + reported + ")"
	}
	return r.GetAuthor()
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// explainLogError adds what to do to the server's answer.
func explainLogError(err error, noToken bool) error {
	var cerr *connect.Error
	if !errors.As(err, &cerr) {
		return err
	}
	switch cerr.Code() {
	case connect.CodeUnauthenticated:
		if noToken {
			return fmt.Errorf("%s: pass --token or --token-file (release-controller dev prints one), or use a kubeconfig that holds a token", cerr.Message())
		}
		return fmt.Errorf("the server refused the token: %s", cerr.Message())
	case connect.CodeUnavailable:
		return fmt.Errorf("the API server is unreachable (%s): is release-controller api or dev running at --server?", cerr.Message())
	}
	return fmt.Errorf("%s: %s", cerr.Code(), cerr.Message())
}
