package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
)

// ConfirmQuestion is the question cdkx asks before a plan that needs approval runs, as Terraform asks it.
const ConfirmQuestion = "Do you want to perform these actions? (y/N) "

// Confirm writes question to the error stream and reads one line of the input stream: "y" or "yes" (any
// case) is true; anything else, an empty line or the end of the input is false. The first Ctrl-C at the
// prompt (ctx cancelled by the interrupt) ends it at once with an *ExitError of code 130 that says
// nothing changed; the reading goroutine is left to the process's exit.
func Confirm(ctx context.Context, io *IOStreams, question, unchanged string) (bool, error) {
	fmt.Fprint(io.ErrOut, question)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(io.In).ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(io.ErrOut)
		return false, &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("interrupted at the prompt; %s", unchanged)}
	case line := <-answer:
		ans := strings.ToLower(strings.TrimSpace(line))
		if line != "" && !strings.HasSuffix(line, "\n") {
			fmt.Fprintln(io.ErrOut) // end of input: the terminal echoed no newline
		}
		return ans == "y" || ans == "yes", nil
	}
}

// ErrNeedsApproval is returned (wrapped, saying what needs it) when a run needs a confirmation that cannot be
// asked: no terminal, or CI set, and no --yes.
var ErrNeedsApproval = errors.New("needs approval")
