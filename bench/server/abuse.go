package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
)

// abuse runs the abuse loads (-abuse) against the real `cdkx server` binary bin, one fresh server process
// per load (its peak RSS is the process's VmHWM), each load bounded by dur and stopping by itself:
//
//   - large-decrypt: -abuse-clients clients each sending 64 MiB bodies to …/decrypt with a read-only
//     token, in a loop;
//   - large-import: the same to …/import (a state route) with a read-write token;
//   - slow: -abuse-slow connections each announcing a 1 MiB body to …/import and sending one byte a second;
//   - idle: -abuse-idle connections opened and left idle.
//
// Meanwhile a healthy client reads the stack (GET …/{stack}) every 20 ms; the table gives the server's
// peak RSS, the healthy client's p50/p99 latency and errors, and what the load's requests were answered.
// serverArgs are added to the server's command line (e.g. the limits' flags).
func abuse(dbURL, bin string, dur time.Duration, clients, slow, idle int, serverArgs []string) error {
	ctx := context.Background()
	// The client's complaints of answers on idle connections (the cap's 503s) are expected here.
	log.SetOutput(io.Discard)
	url, drop, err := freshSchema(ctx, dbURL)
	if err != nil {
		return err
	}
	defer drop()
	token := func(name string, extra ...string) (string, error) {
		out, err := exec.CommandContext(ctx, bin, append([]string{"server", "token", "create", name, "--database-url", url}, extra...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	rw, err := token("abuse-rw")
	if err != nil {
		return fmt.Errorf("token create: %w", err)
	}
	ro, err := token("abuse-ro", "--read-only")
	if err != nil {
		return fmt.Errorf("token create --read-only: %w", err)
	}
	big := bytes.Repeat([]byte("x"), 64<<20)
	loads := []struct {
		name string
		run  func(ctx context.Context, base string, tally func(string))
	}{
		{"large-decrypt", func(ctx context.Context, base string, tally func(string)) {
			largeBodies(ctx, base+"/api/stacks/organization/proj/s/decrypt", "token "+ro, big, clients, tally)
		}},
		{"large-import", func(ctx context.Context, base string, tally func(string)) {
			largeBodies(ctx, base+"/api/stacks/organization/proj/s/import", "token "+rw, big, clients, tally)
		}},
		{"slow", func(ctx context.Context, base string, tally func(string)) {
			slowBodies(ctx, base, "token "+rw, slow, tally)
		}},
		{"idle", func(ctx context.Context, base string, tally func(string)) {
			idleConns(ctx, base, idle, tally)
		}},
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "load\tpeak RSS\tidle RSS\thealthy requests\tp50\tp99\terrors\tload answers\t")
	for _, l := range loads {
		srv, base, err := startServer(ctx, bin, url, serverArgs)
		if err != nil {
			return err
		}
		if _, err := post(ctx, base+"/api/stacks/organization/proj", "token "+rw, []byte(`{"stackName":"s"}`)); err != nil {
			_ = stopServer(srv)
			return err
		}
		before := vm(srv.Process.Pid, "VmRSS")
		lctx, cancel := context.WithTimeout(ctx, dur)
		var mu sync.Mutex
		answers := map[string]int{}
		tally := func(k string) { mu.Lock(); answers[k]++; mu.Unlock() }
		var lat []time.Duration
		var herrs int
		var wg sync.WaitGroup
		wg.Go(func() { l.run(lctx, base, tally) })
		wg.Go(func() {
			// From 127.0.0.2: another client address than the load's 127.0.0.1, as a healthy client is.
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
			for lctx.Err() == nil {
				req, _ := http.NewRequestWithContext(lctx, "GET", base+"/api/stacks/organization/proj/s", nil)
				req.Header.Set("Authorization", "token "+rw)
				t := time.Now()
				resp, err := hc.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					herrs++
				} else {
					lat = append(lat, time.Since(t))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
		wg.Wait()
		cancel()
		peak := vm(srv.Process.Pid, "VmHWM")
		if err := stopServer(srv); err != nil {
			return err
		}
		slices.Sort(lat)
		var keys []string
		for k, n := range answers {
			keys = append(keys, fmt.Sprintf("%s×%d", k, n))
		}
		slices.Sort(keys)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t\n", l.name, mb(peak), mb(before), len(lat), pct(lat, 50), pct(lat, 99), herrs, strings.Join(keys, " "))
	}
	return tw.Flush()
}

func pct(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "-"
	}
	return d[min(len(d)-1, len(d)*p/100)].Round(100 * time.Microsecond).String()
}

// vm reads a field of /proc/pid/status in bytes.
func vm(pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func startServer(ctx context.Context, bin, url string, args []string) (*exec.Cmd, string, error) {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.CommandContext(ctx, bin, append([]string{"server", "--listen", addr, "--database-url", url}, args...)...)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	base := "http://" + addr
	for range 100 {
		req, err := http.NewRequestWithContext(ctx, "GET", base+"/healthz", nil)
		if err != nil {
			return nil, "", err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			return cmd, base, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = stopServer(cmd)
	return nil, "", errors.New("cdkx server did not answer /healthz within 10s")
}

func stopServer(cmd *exec.Cmd) error {
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

func post(ctx context.Context, u, auth string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// largeBodies has n clients post body to u in a loop until ctx ends.
func largeBodies(ctx context.Context, u, auth string, body []byte, n int, tally func(string)) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				code, err := post(ctx, u, auth, body)
				switch {
				case ctx.Err() != nil:
				case err != nil:
					tally("error")
				default:
					tally(strconv.Itoa(code))
				}
			}
		})
	}
	wg.Wait()
}

// slowBodies opens n connections, each announcing a 1 MiB body to …/import and sending one byte a second,
// until ctx ends; it tallies how each connection ended (the status the server answered, or "held" when it
// was still open at the end).
func slowBodies(ctx context.Context, base, auth string, n int, tally func(string)) {
	var wg sync.WaitGroup
	var cut atomic.Int64
	addr := strings.TrimPrefix(base, "http://")
	for range n {
		wg.Go(func() {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				tally("dial error")
				return
			}
			defer func() { _ = c.Close() }()
			fmt.Fprintf(c, "POST /api/stacks/organization/proj/s/import HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Length: %d\r\n\r\n{", addr, auth, 1<<20)
			answered := make(chan string, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					answered <- "closed"
					return
				}
				_ = resp.Body.Close()
				answered <- strconv.Itoa(resp.StatusCode)
			}()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					tally("held")
					return
				case s := <-answered:
					cut.Add(1)
					tally(s)
					return
				case <-tick.C:
					_, _ = c.Write([]byte(" "))
				}
			}
		})
	}
	wg.Wait()
}

// idleConns opens n connections and leaves them idle until ctx ends; it tallies how each ended.
func idleConns(ctx context.Context, base string, n int, tally func(string)) {
	var wg sync.WaitGroup
	addr := strings.TrimPrefix(base, "http://")
	for range n {
		wg.Go(func() {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				tally("dial error")
				return
			}
			defer func() { _ = c.Close() }()
			closed := make(chan string, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					closed <- "closed"
					return
				}
				_ = resp.Body.Close()
				closed <- strconv.Itoa(resp.StatusCode)
			}()
			select {
			case <-ctx.Done():
				tally("held")
			case s := <-closed:
				tally(s)
			}
		})
	}
	wg.Wait()
}
