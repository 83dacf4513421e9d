package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/release-controller/release-controller/internal/version"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "release-controller",
		Short: "Build, verify, accept and publish release payloads on Kubernetes",
		Long: `release-controller turns component image builds into versioned release payloads,
verifies them with test jobs, and accepts or rejects them.`,
		SilenceUsage: true,
	}
	root.AddCommand(newVersionCommand(), newControllerCommand(), newPayloadCommand(), newDevCommand(), newAPICommand(), newLogCommand(), newPipelineCommand(), newReconcileCommand(), newRiskCommand(), newFreezeCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Version)
			return err
		},
	}
}
