package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// UsageError is a mistake in the command line itself: an unknown command or flag, a flag value of the
// wrong form, or the wrong number of arguments. PrintError follows it with where to read the usage.
type UsageError struct {
	// Command is the path of the command whose usage was wrong, e.g. "cdkx deploy".
	Command string
	Err     error
}

// Error returns Err's text.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *UsageError) Unwrap() error { return e.Err }

// Execute runs root, the cdkx command with every command added, after Guide.
func Execute(ctx context.Context, root *cobra.Command) error {
	Guide(root)
	return root.ExecuteContext(ctx)
}

// Guide makes every mistake in a command line under root a *UsageError that says what was probably meant:
// unknown commands suggest the nearest command, or the cdkx command for another tool's word ("plan" →
// "diff"); unknown flags the nearest flag of the command; invalid flag values name the flag and the form
// it wants; wrong argument counts name the command. Call it once all commands are added: it wraps each
// command's argument check, and makes each command that only groups others runnable (it prints its help)
// so that an unknown word under it is an error instead of a help page.
func Guide(root *cobra.Command) {
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &UsageError{Command: cmd.CommandPath(), Err: explainFlagError(cmd.Flags(), err)}
	})
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			guideHelp(c)
		}
	}
	grouping := map[*cobra.Command]bool{} // commands made runnable only to check their arguments
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		c.Args = guideArgs(c.Args)
		if !c.Runnable() && c.HasSubCommands() {
			grouping[c] = true
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	// Their usage stays that of a command that only groups others ("cdkx deployments [command]", no
	// "cdkx deployments [flags]" line).
	usage := root.UsageFunc()
	root.SetUsageFunc(func(cmd *cobra.Command) error {
		if grouping[cmd] {
			run := cmd.RunE
			cmd.RunE = nil
			defer func() { cmd.RunE = run }()
		}
		return usage(cmd)
	})
}

// PrintError prints what ended a run on w, as main does: nothing for ErrSilent or an *ExitError without
// Err (the command printed its problem already); else "error: " and the message, and after a *UsageError
// where to read the command's usage.
func PrintError(w io.Writer, err error) {
	var ee *ExitError
	if err == nil || errors.Is(err, ErrSilent) || (errors.As(err, &ee) && ee.Err == nil) {
		return
	}
	// An error may carry text from records and providers: each of its lines is sanitized (its line
	// breaks are the error's own).
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = view.Sanitize(l)
	}
	fmt.Fprintln(w, "error: "+strings.Join(lines, "\n"))
	var ue *UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "Run '%s --help' for usage.\n", ue.Command)
	}
}

// guideHelp makes `cdkx help WORD` for an unknown WORD the error of `cdkx WORD`, with its suggestion,
// instead of the root's help.
func guideHelp(help *cobra.Command) {
	run := help.Run
	help.Run = nil
	help.RunE = func(cmd *cobra.Command, args []string) error {
		target, rest, _ := cmd.Root().Find(args)
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") && target.HasSubCommands() {
			return &UsageError{Command: target.CommandPath(), Err: unknownCommand(target, rest[0])}
		}
		run(cmd, args)
		return nil
	}
}

// guideArgs wraps a command's argument check (nil: cobra's default, which lets a command that groups
// others accept no unknown word) so that its errors are *UsageErrors: an unknown word under a command
// that groups others suggests the nearest subcommand; arguments to a command that takes none say so.
func guideArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		var err error
		switch {
		case check != nil:
			err = check(cmd, args)
		case cmd.HasSubCommands() && len(args) > 0:
			err = errors.New("unknown")
		}
		if err == nil {
			return nil
		}
		path := cmd.CommandPath()
		switch {
		case cmd.HasAvailableSubCommands() && len(args) > 0:
			err = unknownCommand(cmd, args[0])
		case len(args) > 0 && check != nil && check(cmd, nil) == nil && check(cmd, args[:1]) != nil:
			err = fmt.Errorf("%s takes no arguments, got %q", path, args[0])
		default:
			err = fmt.Errorf("%s: %w", path, err)
		}
		return &UsageError{Command: path, Err: err}
	}
}

// otherTools maps the commands of Terraform, Pulumi and the AWS CDK to cdkx's: the command ("" when cdkx
// needs none) and a note that says so.
var otherTools = map[string]struct{ command, note string }{
	"plan":         {"diff", "terraform plan is cdkx diff"},
	"apply":        {"deploy", "terraform apply is cdkx deploy"},
	"show":         {"list", "terraform show is cdkx list, with cdkx outputs for the outputs"},
	"output":       {"outputs", "terraform output is cdkx outputs"},
	"force-unlock": {"unlock", "terraform force-unlock is cdkx unlock"},
	"up":           {"deploy", "pulumi up is cdkx deploy"},
	"update":       {"deploy", "pulumi update is cdkx deploy"},
	"preview":      {"diff", "pulumi preview is cdkx diff"},
	"stack":        {"list", "pulumi stack ls is cdkx list"},
	"stacks":       {"list", ""},
	"down":         {"destroy", ""},
	"delete":       {"destroy", ""},
	"log":          {"history", ""},
	"logs":         {"history", ""},
	"init": {"", "cdkx needs no init: it reads the cloud assembly in cdkx.out (or --app) and keeps state " +
		"in .cdkx/state.db (or --state)"},
	"synth": {"", "cdkx deploys the cloud assembly your app synthesized: run the app (cdk synth), then " +
		"cdkx deploy"},
	"bootstrap": {"", "cdkx needs no bootstrap: state lives in .cdkx/state.db, or where --state points"},
}

// unknownCommand says that name is no subcommand of parent, with the likely one: the cdkx command for
// another tool's word, else cobra's suggestions (within 2 edits, a prefix, or a command's SuggestFor).
func unknownCommand(parent *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, parent.CommandPath())
	if o, ok := otherTools[strings.ToLower(name)]; ok && !parent.HasParent() {
		if o.command == "" {
			return fmt.Errorf("%s; %s", msg, o.note)
		}
		if sub, _, err := parent.Find([]string{o.command}); err == nil && sub != parent {
			if o.note != "" {
				return fmt.Errorf("%s; did you mean %q? (%s)", msg, o.command, o.note)
			}
			return fmt.Errorf("%s; did you mean %q?", msg, o.command)
		}
	}
	for _, c := range parent.Commands() {
		if c.IsAvailableCommand() && strings.EqualFold(c.Name(), name) {
			return fmt.Errorf("%s; did you mean %q?", msg, c.Name())
		}
	}
	if s := parent.SuggestionsFor(name); len(s) > 0 {
		return fmt.Errorf("%s; did you mean %s?", msg, quotedOr(s))
	}
	return errors.New(msg)
}

// quotedOr renders `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
func quotedOr(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// otherFlags maps flags of Terraform, Pulumi and the AWS CDK to cdkx's: the flag and a note. They apply
// only where the command has the cdkx flag.
var otherFlags = map[string]struct{ flag, note string }{
	"parallelism":  {"concurrency", "Terraform's -parallelism"},
	"parallel":     {"concurrency", ""},
	"force":        {"yes", "cdk destroy --force"},
	"skip-preview": {"yes", "pulumi up --skip-preview"},
	"output":       {"app", "cdk --output is the cloud assembly directory"},
	"o":            {"app", "cdk -o is the cloud assembly directory"},
	"stack":        {"", "name the stacks as arguments instead"},
	"all":          {"", "every stack is the default when none is named"},
}

// explainFlagError rewrites pflag's errors about the flags in fs (the command's own and inherited ones):
// an unknown flag suggests the nearest one (or cdkx's name for another tool's flag); an invalid value
// names the flag and the form it wants; a missing value says what the flag is.
func explainFlagError(fs *pflag.FlagSet, err error) error {
	var (
		notExist *pflag.NotExistError
		invalid  *pflag.InvalidValueError
		required *pflag.ValueRequiredError
	)
	switch {
	case errors.As(err, &notExist):
		return unknownFlag(fs, notExist)
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		return fmt.Errorf("invalid value %q for --%s: want %s", invalid.GetValue(), f.Name, valueForm(f, invalid.Unwrap()))
	case errors.As(err, &required):
		f := required.GetFlag()
		return fmt.Errorf("--%s needs a value: %s", f.Name, f.Usage)
	}
	return err
}

// unknownFlag explains pflag's error about a flag fs does not have.
func unknownFlag(fs *pflag.FlagSet, e *pflag.NotExistError) error {
	name, group := e.GetSpecifiedName(), e.GetSpecifiedShortnames()
	if group != "" {
		// A single dash: "-auto-approve" is read as the shorthands a, u, t, …
		long, _, _ := strings.Cut(group, "=")
		if f := fs.Lookup(long); f != nil && len(long) > 1 {
			return fmt.Errorf("unknown flag -%s; did you mean --%s? (long flags take two dashes)", long, f.Name)
		}
		if len(group) > 1 {
			return fmt.Errorf("unknown flag -%s in -%s", name, group)
		}
		return fmt.Errorf("unknown flag -%s", name)
	}
	msg := "unknown flag --" + name
	if o, ok := otherFlags[name]; ok {
		if o.flag == "" {
			return fmt.Errorf("%s; %s", msg, o.note)
		}
		if fs.Lookup(o.flag) != nil {
			if o.note != "" {
				return fmt.Errorf("%s; did you mean --%s? (%s)", msg, o.flag, o.note)
			}
			return fmt.Errorf("%s; did you mean --%s?", msg, o.flag)
		}
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if near := diag.Nearest(name, names); near != "" {
		return fmt.Errorf("%s; did you mean --%s?", msg, near)
	}
	return errors.New(msg)
}

// valueForm says what form of value flag f wants, by its type; for a type it does not know, the
// parser's own complaint (cause).
func valueForm(f *pflag.Flag, cause error) string {
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "count":
		example := f.DefValue
		if example == "" || example == "0" {
			example = "10"
		}
		return "a whole number, e.g. " + example
	case "duration":
		return "a duration like 30s, 5m or 1h30m"
	case "bool":
		return fmt.Sprintf("true or false (--%s alone is true)", f.Name)
	case "float32", "float64":
		return "a number, e.g. 0.5"
	}
	return cause.Error()
}
