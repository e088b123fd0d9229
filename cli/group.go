package cli

import (
	"github.com/spf13/cobra"
)

// group is a command that holds subcommands and runs none itself.
func group(use, short, long, example, groupID string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use: use, Short: short, Long: long, Example: example, GroupID: groupID,
		Args:               cobra.ArbitraryArgs,
		DisableFlagParsing: true,
		RunE:               groupRun,
	}
	c.AddCommand(subs...)
	return c
}
