package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/release-controller/release-controller/internal/server/approval"
)

func newPipelineCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pipeline",
		Short: "Act on pipelines through the API server",
	}
	cmd.AddCommand(newPipelineApproveCommand())
	return cmd
}

func newPipelineApproveCommand() *cobra.Command {
	var flags logClientFlags
	var keyFile string
	cmd := &cobra.Command{
		Use:   "approve NAMESPACE/NAME ENVIRONMENT REVISION",
		Short: "Approve the promotion of a revision into an environment that waits for approval",
		Long: `Approve the promotion of REVISION into ENVIRONMENT of the pipeline NAMESPACE/NAME, which
must be waiting for exactly that revision (kubectl get pipeline shows it in
status.environments[].waitingApproval).

With --key-file the request is signed with the environment's shared key (the hmac-key of the
Secret its approval names); otherwise it carries a bearer token (--token, --token-file, or
the kubeconfig's), whose user Kubernetes RBAC must allow to update pipelines/approval.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			namespace, name, ok := strings.Cut(args[0], "/")
			if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
				return fmt.Errorf("the pipeline is NAMESPACE/NAME, not %q", args[0])
			}
			req := approval.Request{Server: flags.server, Namespace: namespace, Pipeline: name, Environment: args[1], Revision: args[2]}
			if keyFile != "" {
				if flags.token != "" || flags.tokenFile != "" {
					return errors.New("--key-file signs the request: it does not go with --token or --token-file")
				}
				key, err := os.ReadFile(keyFile)
				if err != nil {
					return fmt.Errorf("reading --key-file: %w", err)
				}
				if req.Key = []byte(strings.TrimRight(string(key), "\r\n")); len(req.Key) == 0 {
					return errors.New("--key-file is empty")
				}
			} else {
				token, err := flags.bearerToken()
				if err != nil {
					return err
				}
				req.Token = token
			}
			resp, err := req.Send(cmd.Context(), nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approved %s of %s/%s into %s (approver %s)\n", resp.Revision, resp.Namespace, resp.Pipeline, resp.Environment, resp.Approver)
			return nil
		},
	}
	flags.bind(cmd)
	cmd.Flags().StringVar(&keyFile, "key-file", "", "file holding the environment's shared key (the hmac-key of its approval Secret): sign the request instead of sending a token")
	return cmd
}
