package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Env returns the operation environment of a command: state in b, the providers reg, the live table on
// stderr (or JSON lines on stdout with --json), the factory's clock and ticker, the configured limits, this
// process as lock holder waiting up to --lock-timeout, and the interrupt notice.
func Env(f *Factory, cfg *Config, b state.Backend, reg *engine.Registry) operation.Env {
	env := operation.Env{Backend: b, Providers: reg, Now: f.Now, Ticker: f.Ticker,
		Concurrency: cfg.Concurrency, ProviderConcurrency: cfg.ProviderConcurrency,
		Lock: operation.LockPolicy{Holder: LockHolder(), Timeout: cfg.LockTimeout, Notify: LockWaitNotice(f.IO, cfg),
			Queued: QueueWaitNotice(f.IO, cfg)},
		CreatedBy: CreatedBy(), Version: f.Version,
		NewView: func(stacks, types, ids []string) operation.View { return Events(f, cfg, stacks, types, ids) },
	}
	if !cfg.JSON {
		env.Notice = func(text string) { // it may name records (an abort's author): sanitized, line by line
			lines := strings.Split(text, "\n")
			for i, l := range lines {
				lines[i] = view.Sanitize(l)
			}
			fmt.Fprintln(f.IO.ErrOut, strings.Join(lines, "\n"))
		}
		env.OnInterrupt = func(inFlight int64) {
			fmt.Fprintf(f.IO.ErrOut, "\nInterrupt received: no new step starts; %d provider call(s) in flight finish and are recorded (one that receives nothing for a second is ended and left pending). Press Ctrl-C again to quit at once (pending operations stay in state).\n", inFlight)
		}
	}
	return env
}

// Events returns the event view of the configuration: JSON lines on stdout, or the table on stderr (live on
// a terminal, redrawn every liveRefresh). The table of a command's first run becomes its stderr until
// Finish, so that notices printed meanwhile go above the live region, and so that the runs that follow
// (a deploy after its settling) and the summary are shown by the same table, which counts skipped
// resources by root cause across them. With stacks, types and ids all nil (the summary), it returns that
// table as it is.
func Events(f *Factory, cfg *Config, stacks, types, ids []string) view.Events {
	if cfg.JSON {
		return view.NewJSONLines(f.IO.Out)
	}
	if t, ok := f.IO.ErrOut.(*view.Table); ok {
		if stacks != nil || types != nil || ids != nil {
			t.Begin(stacks, types, ids)
		}
		return t
	}
	t := view.NewTable(f.IO.ErrOut, view.TableOptions{Live: f.IO.Live(), Color: f.IO.Color && !cfg.NoColor,
		Size: f.IO.Size, ShowUnchanged: cfg.ShowUnchanged, Refresh: liveRefresh}, stacks, types, ids)
	f.IO.ErrOut = t
	return t
}

// liveRefresh is how often the live region is redrawn (its elapsed times), with the rows of the events
// since: at most 5 redraws a second however fast events come.
const liveRefresh = 200 * time.Millisecond

// Finish renders the end of a run (the summary line or object) and returns the error whose exit code says
// how it ended: nil, or an *ExitError for failures (4) and interrupts (130). stderr is the terminal
// again, no longer the run's table.
func Finish(f *Factory, cfg *Config, command string, res *engine.Result, elapsed time.Duration, outputs map[string]map[string]any) error {
	return FinishSummary(f, cfg, view.Summary{Command: command, Result: res, Elapsed: elapsed, Outputs: outputs})
}

// FinishSummary is Finish with the whole summary (a deploy's unchanged stacks).
func FinishSummary(f *Factory, cfg *Config, s view.Summary) error {
	Events(f, cfg, nil, nil, nil).Summary(s)
	endView(f)
	if s.Result == nil {
		return nil
	}
	if err := s.Result.Err(); err != nil {
		return &ExitError{Code: ExitCode(err)}
	}
	return nil
}

// endView ends the command's table: the live region, if any, leaves the screen, and stderr is the terminal
// again.
func endView(f *Factory) {
	if t, ok := f.IO.ErrOut.(*view.Table); ok {
		t.Pause()
		f.IO.ErrOut = t.Out()
	}
}

// PauseView takes the live region of a command's table, if any, off the screen until its next run, so that
// a question can be asked below what was printed.
func PauseView(f *Factory) {
	if t, ok := f.IO.ErrOut.(*view.Table); ok {
		t.Pause()
	}
}

// RunError turns what an operation returned into what the command ends with (the live region leaves
// the screen first): a locked stack says what to
// do (exit 3), a plan with errors exits 1 (its diagnostics were printed), an unsettled pending operation
// shows what failed (exit 4), "nothing to do" prints why and succeeds, a confirmation answered no prints
// that nothing changed and exits 1.
func RunError(f *Factory, cfg *Config, err error) error {
	var le *state.LockedError
	var pe *operation.PlanError
	var se *operation.SettleError
	if errors.As(err, &se) {
		Events(f, cfg, nil, nil, nil).Summary(view.Summary{Command: "refresh", Result: se.Result})
	}
	endView(f)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &le):
		return &ExitError{Code: ExitLocked, Err: fmt.Errorf("%w; wait for it to finish, or pass --lock-timeout 10m to wait", err)}
	case errors.As(err, new(*operation.QueueTimeoutError)):
		return &ExitError{Code: ExitLocked, Err: err}
	case errors.As(err, &pe):
		return &ExitError{Code: ExitErr}
	case se != nil:
		return &ExitError{Code: ExitFailed, Err: se}
	case errors.Is(err, operation.ErrNothing):
		msg := err.Error()
		fmt.Fprintln(f.IO.ErrOut, strings.ToUpper(msg[:1])+msg[1:]+".")
		return nil
	case errors.Is(err, operation.ErrCancelled):
		msg := err.Error()
		fmt.Fprintln(f.IO.ErrOut, strings.ToUpper(msg[:1])+msg[1:]+".")
		return &ExitError{Code: ExitErr}
	}
	return err
}

// WithBackend opens the configured state backend, runs do with it and closes it; a failure to close
// (the SQLite backend writes its last WAL checkpoint then) is the error when do succeeded.
func WithBackend(ctx context.Context, f *Factory, cfg *Config, do func(state.Backend) error) (err error) {
	b, err := f.OpenBackend(ctx, cfg.State)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return do(b)
}
