package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/release-controller/release-controller/internal/server/approval"
)

func newPipelineCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pipeline",
		Short: "Act on pipelines through the API server",
	}
	cmd.AddCommand(newPipelineApproveCommand(), newPipelineRejectCommand())
	return cmd
}

// credentialsHelp is how approve and reject authenticate.
const credentialsHelp = `With --key-file the request is signed with the environment's shared key (the hmac-key of the
Secret its approval.secretRef names): one machine approver, refused by a policy that names
users or groups. Otherwise it carries a bearer token (--token, --token-file, or the
kubeconfig's), whose user Kubernetes RBAC must allow to update pipelines/approval, and whom
the environment's approval.users or approval.groups must name when they are set.`

// approvalFlags are the flags approve and reject share: where to send the request and how to
// authenticate it.
type approvalFlags struct {
	logClientFlags
	keyFile string
}

func (f *approvalFlags) bind(cmd *cobra.Command) {
	f.logClientFlags.bind(cmd)
	cmd.Flags().StringVar(&f.keyFile, "key-file", "", "file holding the environment's shared key (the hmac-key of its approval Secret): sign the request instead of sending a token")
}

// request is the approval request of args (NAMESPACE/NAME ENVIRONMENT REVISION), with the
// key of --key-file or the bearer token.
func (f *approvalFlags) request(args []string) (approval.Request, error) {
	namespace, name, ok := strings.Cut(args[0], "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return approval.Request{}, fmt.Errorf("the pipeline is NAMESPACE/NAME, not %q", args[0])
	}
	req := approval.Request{Server: f.server, Namespace: namespace, Pipeline: name, Environment: args[1], Revision: args[2]}
	if f.keyFile != "" {
		if f.token != "" || f.tokenFile != "" {
			return req, errors.New("--key-file signs the request: it does not go with --token or --token-file")
		}
		key, err := os.ReadFile(f.keyFile)
		if err != nil {
			return req, fmt.Errorf("reading --key-file: %w", err)
		}
		if req.Key = []byte(strings.TrimRight(string(key), "\r\n")); len(req.Key) == 0 {
			return req, errors.New("--key-file is empty")
		}
		return req, nil
	}
	token, err := f.bearerToken()
	req.Token = token
	return req, err
}

func newPipelineApproveCommand() *cobra.Command {
	var flags approvalFlags
	cmd := &cobra.Command{
		Use:   "approve NAMESPACE/NAME ENVIRONMENT REVISION",
		Short: "Approve the promotion of a revision into an environment that waits for approval",
		Long: `Approve the promotion of REVISION into ENVIRONMENT of the pipeline NAMESPACE/NAME, which
must be waiting for exactly that revision (kubectl get pipeline shows it in
status.environments[].waitingApproval). The revision is promoted once the environment's
policy is met: approval.minApprovers distinct approvers, none of whom approved it for the
previous environment under approval.separationOfDuties.

` + credentialsHelp,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := flags.request(args)
			if err != nil {
				return err
			}
			resp, err := req.Send(cmd.Context(), nil)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "approved %s of %s/%s into %s (approver %s)\n", resp.Revision, resp.Namespace, resp.Pipeline, resp.Environment, resp.Approver)
			if resp.PolicyMet != nil {
				fmt.Fprintf(out, "the approval policy is met (%d of %d: %s): the revision is promoted\n",
					len(resp.Approvers), resp.MinApprovers, strings.Join(resp.Approvers, ", "))
			} else {
				fmt.Fprintf(out, "%d of %d approvals (%s): %d more needed\n",
					len(resp.Approvers), resp.MinApprovers, strings.Join(resp.Approvers, ", "), resp.MinApprovers-len(resp.Approvers))
			}
			warn(cmd.ErrOrStderr(), resp.Warnings)
			return nil
		},
	}
	flags.bind(cmd)
	return cmd
}

func newPipelineRejectCommand() *cobra.Command {
	var flags approvalFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "reject NAMESPACE/NAME ENVIRONMENT REVISION --reason REASON",
		Short: "Reject a revision for an environment: it is never promoted there",
		Long: `Reject REVISION for ENVIRONMENT of the pipeline NAMESPACE/NAME, which must ask for
approval: the revision is never promoted there, the reason is recorded in
status.environments[].rejections (the newest 16), and approvals of the revision recorded
so far are withdrawn. The revision need not be waiting yet; one the environment was
promoted to already cannot be rejected.

` + credentialsHelp,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return errors.New("--reason is required: say why the revision is rejected")
			}
			req, err := flags.request(args)
			if err != nil {
				return err
			}
			resp, err := req.Reject(cmd.Context(), nil, reason)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "rejected %s of %s/%s for %s (by %s at %s): %s\n", resp.Revision, resp.Namespace, resp.Pipeline, resp.Environment,
				resp.By, resp.Time.UTC().Format(time.RFC3339), resp.Reason)
			if len(resp.Withdrawn) > 0 {
				fmt.Fprintf(out, "withdrawn approvals: %s\n", strings.Join(resp.Withdrawn, ", "))
			}
			warn(cmd.ErrOrStderr(), resp.Warnings)
			return nil
		},
	}
	flags.bind(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", fmt.Sprintf("why the revision is rejected (required, at most %d characters)", approval.MaxReasonLength))
	return cmd
}

// warn prints the server's warnings of a recorded request.
func warn(w io.Writer, warnings []string) {
	for _, msg := range warnings {
		fmt.Fprintln(w, "warning:", msg)
	}
}
