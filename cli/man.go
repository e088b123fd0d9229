package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A man page in roff, written from the same command definitions as the
// help. cobra/doc would do it too, but it brings a Markdown-to-roff
// converter and a YAML library into the binary for one page; this is
// sixty lines.

func (a *app) manCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "man [--dir DIR]",
		Short: "the manual page spate(1)",
		Long: `Man writes the manual page spate(1), generated from the same definitions
as the help: every command with its synopsis, description, flags and
examples. Without --dir it goes to stdout.`,
		Example: `  spate man | man -l -
  spate man --dir /usr/local/share/man/man1`,
		GroupID: "other",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, _ := cmd.Flags().GetString("dir")
			if dir == "" {
				return writeMan(a.stdout, cmd.Root(), a.version)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return usagef("spate man: --dir: %v", err)
			}
			path := filepath.Join(dir, "spate.1")
			f, err := os.Create(path)
			if err != nil {
				return usagef("spate man: --dir: %v", err)
			}
			if err := writeMan(f, cmd.Root(), a.version); err != nil {
				f.Close()
				return usagef("spate man: %s: %v", path, err)
			}
			if err := f.Close(); err != nil {
				return usagef("spate man: %s: %v", path, err)
			}
			fmt.Fprintln(a.stdout, path)
			return nil
		},
	}
	c.Flags().String("dir", "", "write DIR/spate.1 instead of printing the page")
	_ = c.MarkFlagDirname("dir")
	return c
}

// writeMan writes spate(1): NAME, SYNOPSIS, DESCRIPTION, then a section
// per command.
func writeMan(w io.Writer, root *cobra.Command, version string) error {
	var b strings.Builder
	b.WriteString(".\\\" -*- coding: utf-8 -*-\n") // for preconv: the page has → and ±
	fmt.Fprintf(&b, ".TH SPATE 1 \"\" \"spate %s\" \"spate manual\"\n", roff(version))
	fmt.Fprintf(&b, ".SH NAME\nspate \\- %s\n", roff(root.Short))
	b.WriteString(".SH SYNOPSIS\n.B spate\n.I COMMAND\n[\n.I flags\n]\n")
	fmt.Fprintf(&b, ".SH DESCRIPTION\n%s\n", roffText(root.Long))
	b.WriteString(".SH COMMANDS\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if !s.IsAvailableCommand() || s.Name() == "help" {
				continue
			}
			manCommand(&b, s)
			walk(s)
		}
	}
	walk(root)
	b.WriteString(".SH EXIT STATUS\n0 ok, 1 a check failed (or the cluster refused an action), 2 bad input or could not run.\n")
	b.WriteString(".SH SEE ALSO\nThe README.md of the source tree; spate COMMAND \\-\\-help.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func manCommand(b *strings.Builder, c *cobra.Command) {
	path := strings.TrimPrefix(c.CommandPath(), "spate ")
	fmt.Fprintf(b, ".SS %s\n", roff(path))
	use := strings.TrimPrefix(c.UseLine(), "spate ")
	fmt.Fprintf(b, ".B spate %s\n.br\n", roff(use))
	text := c.Long
	if text == "" {
		text = c.Short
	}
	fmt.Fprintf(b, "%s\n", roffText(text))
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name, usage := pflag.UnquoteUsage(f)
		fmt.Fprintf(b, ".TP\n\\fB\\-\\-%s\\fR", roff(f.Name))
		if name != "" {
			fmt.Fprintf(b, " \\fI%s\\fR", roff(name))
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(b, "\n%s\n", roff(usage))
	})
	if c.Example != "" {
		b.WriteString(".PP\nExamples:\n.nf\n.RS\n")
		for _, l := range strings.Split(c.Example, "\n") {
			fmt.Fprintf(b, "%s\n", roff(strings.TrimSpace(l)))
		}
		b.WriteString(".RE\n.fi\n")
	}
}

// roff escapes a line of text for roff: backslashes, and a dot or quote
// at the start of a line.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffText is paragraphs of text: lines joined, blank lines as .PP.
func roffText(s string) string {
	var out []string
	for _, para := range strings.Split(strings.TrimSpace(s), "\n\n") {
		out = append(out, roff(strings.Join(strings.Fields(para), " ")))
	}
	return strings.Join(out, "\n.PP\n")
}
