package readme

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// commands returns the README's commands: every line of a ```sh block and
// every line indented by four spaces that starts with "go ".
func commands(t *testing.T, readme []byte) []string {
	t.Helper()
	var out []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && strings.TrimSpace(line) != "":
			out = append(out, strings.TrimSpace(line))
		case strings.HasPrefix(line, "    go "):
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// tiny are the overrides that make a command quick, by the command's
// first three words; go's flag package keeps the last value of a flag,
// so they are appended. "-out" is replaced by a temporary directory.
var tiny = map[string][]string{
	"go run ./eval":  nil,
	"eval run":       {"-steps", "20"},
	"eval paired":    {"-placements", "2", "-steps", "40"},
	"eval live":      {"-duration", "1s", "-time-scale", "250ms", "-warmup", "0s"},
	"train -config":  {"-steps", "1", "-n-epochs", "1", "-select", "last"},
	"train -env":     {"-steps", "2048"},
	"serve local":    {"-duration", "1s", "-rate", "500"},
	"serve api":      nil,
	"go test ./...":  nil,
	"pip install":    nil,
	"python3 python": nil,
	"curl -s":        nil,
}

// TestREADMECommands runs the README's commands through built binaries.
func TestREADMECommands(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := commands(t, readme)
	if len(cmds) < 8 {
		t.Fatalf("the README shows %d commands", len(cmds))
	}
	bin := t.TempDir()
	for _, c := range []string{"eval", "train", "serve"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, c), "./"+c)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./%s: %v\n%s", c, err, out)
		}
	}
	var api string // the endpoint `serve api` answers on, for the curl lines
	for _, line := range cmds {
		f := strings.Fields(line)
		if i := indexOf(f, "#"); i >= 0 {
			f = f[:i]
		}
		switch {
		case f[0] == "go" && f[1] == "test", f[0] == "pip", f[0] == "python3":
			continue // the suite itself; the Python client is tested by .ci/run
		case f[0] == "curl":
			if api == "" {
				t.Errorf("%s: no serve api started before it", line)
				continue
			}
			url := strings.Replace(f[len(f)-1], "localhost:8080", api, 1)
			resp, err := http.Get("http://" + strings.TrimPrefix(url, "http://"))
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %v %v", line, err, resp)
			}
			if resp != nil {
				resp.Body.Close()
			}
			continue
		case f[0] != "go" || f[1] != "run" || !strings.HasPrefix(f[2], "./"):
			t.Errorf("README command %q is not one this test knows how to run", line)
			continue
		}
		name := strings.TrimPrefix(f[2], "./")
		args := append([]string(nil), f[3:]...)
		key := name
		if len(args) > 0 {
			key += " " + args[0]
		}
		over, known := tiny[key]
		if !known {
			t.Errorf("README command %q has no tiny settings here (key %q)", line, key)
			continue
		}
		hasOut := false
		for i := range args {
			if args[i] == "-out" && i+1 < len(args) {
				args[i+1] = filepath.Join(t.TempDir(), "out")
				hasOut = true
			}
		}
		if name == "train" && !hasOut { // its default -out is under the working directory
			args = append(args, "-out", filepath.Join(t.TempDir(), "out"))
		}
		args = append(args, over...)
		if key == "serve api" {
			addr := freeAddr(t)
			args = append(args, "-addr", addr)
			stop := startServer(t, filepath.Join(bin, name), root, args, addr)
			t.Cleanup(stop)
			api = addr
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(out))
		}
	}
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startServer starts a server command in its own process group and waits
// until it answers /healthz; the returned function stops it and its group.
func startServer(t *testing.T, bin, dir string, args []string, addr string) func() {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	for range 2400 { // up to two minutes on a loaded host
		resp, err := http.Get(fmt.Sprintf("http://%s/readyz", addr))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	t.Fatalf("%s did not answer on %s:\n%s", bin, addr, tail(out.Bytes()))
	return nil
}
