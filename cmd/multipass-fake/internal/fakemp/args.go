package fakemp

import (
	"fmt"
	"regexp"
	"strings"
)

// option is one command-line option of a command: its long name (the key it is stored under), its
// one-letter short name if any, and whether it takes a value.
type option struct {
	long, short string
	takesValue  bool
}

// globalOptions are the options every command accepts (src/client/cli/argparser.cpp, ArgParser::parse):
// -h/--help, -v/--verbose (repeated as -vv … -vvvv) and the hidden -V/--version.
var globalOptions = []option{
	{long: "help", short: "h"},
	{long: "verbose", short: "v"},
	{long: "version", short: "V"},
}

// parsedArgs holds a command line parsed against a command's options: the values of every option given
// (flags get an empty value per occurrence), and the positional arguments after the command name.
type parsedArgs struct {
	values     map[string][]string
	positional []string
}

func (p parsedArgs) isSet(long string) bool { return len(p.values[long]) > 0 }

// value is the last value given for the option, as QCommandLineParser::value returns it.
func (p parsedArgs) value(long string) string {
	v := p.values[long]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

var verboseShort = regexp.MustCompile(`^-v+$`)

// parseArgs parses args (without the program name) the way QCommandLineParser does for multipass:
// options may come before, between or after positional arguments; "--" ends the options; a long option
// takes its value as "--name value" or "--name=value", a short one as "-n value" or "-nvalue". Its errors
// are QCommandLineParser's texts ("Unknown option 'x'.", "Missing value after '--name'.", "Unexpected
// value after '--purge'."), which multipass prints on stderr before exiting 1.
func parseArgs(args []string, opts []option) (parsedArgs, error) {
	all := append(append([]option(nil), globalOptions...), opts...)
	byLong := map[string]option{}
	byShort := map[string]option{}
	for _, o := range all {
		byLong[o.long] = o
		if o.short != "" {
			byShort[o.short] = o
		}
	}
	p := parsedArgs{values: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.positional = append(p.positional, args[i+1:]...)
			return p, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			o, ok := byLong[name]
			if !ok {
				return p, fmt.Errorf("Unknown option '%s'.", name) //nolint:revive,staticcheck // QCommandLineParser's text
			}
			switch {
			case o.takesValue && hasVal:
				p.values[o.long] = append(p.values[o.long], val)
			case o.takesValue:
				if i+1 >= len(args) {
					return p, fmt.Errorf("Missing value after '%s'.", a) //nolint:revive,staticcheck // QCommandLineParser's text
				}
				i++
				p.values[o.long] = append(p.values[o.long], args[i])
			case hasVal:
				return p, fmt.Errorf("Unexpected value after '--%s'.", name) //nolint:revive,staticcheck // QCommandLineParser's text
			default:
				p.values[o.long] = append(p.values[o.long], "")
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if verboseShort.MatchString(a) {
				p.values["verbose"] = append(p.values["verbose"], "")
				continue
			}
			short, rest := a[1:2], a[2:]
			o, ok := byShort[short]
			if !ok {
				return p, fmt.Errorf("Unknown option '%s'.", a[1:]) //nolint:revive,staticcheck // QCommandLineParser's text
			}
			switch {
			case o.takesValue && rest != "":
				p.values[o.long] = append(p.values[o.long], rest)
			case o.takesValue:
				if i+1 >= len(args) {
					return p, fmt.Errorf("Missing value after '%s'.", a) //nolint:revive,staticcheck // QCommandLineParser's text
				}
				i++
				p.values[o.long] = append(p.values[o.long], args[i])
			case rest != "":
				return p, fmt.Errorf("Unknown option '%s'.", a[1:]) //nolint:revive,staticcheck // QCommandLineParser's text
			default:
				p.values[o.long] = append(p.values[o.long], "")
			}
		default:
			p.positional = append(p.positional, a)
		}
	}
	return p, nil
}

// commandOf returns the command name (the first argument that is not an option) and the arguments
// without it.
func commandOf(args []string) (string, []string) {
	for i, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest := append(append([]string(nil), args[:i]...), args[i+1:]...)
			return a, rest
		}
	}
	return "", args
}
