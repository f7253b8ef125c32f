package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// JoinerBinary builds cmd/joiner once per test binary into dir (a
// directory of the caller's own: a path shared by concurrent test binaries
// would let one overwrite the executable another is starting) and returns
// its path.
type JoinerBinary struct {
	Dir string
	// Tags are build tags (go build -tags), such as the chaos suite's
	// chaosbugs.
	Tags string
	once sync.Once
	path string
	err  error
}

// Path builds the binary on first use; a build failure fails t.
func (b *JoinerBinary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		b.path = filepath.Join(b.Dir, "joiner")
		args := []string{"build", "-o", b.path}
		if b.Tags != "" {
			args = append(args, "-tags", b.Tags)
		}
		out, err := exec.Command("go", append(args, "github.com/joiner-dev/joiner/cmd/joiner")...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("building joiner: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// JoinerProcess is one running `joiner` process whose output goes to a
// log file. It is stopped (SIGTERM) when the test ends, and its log's tail
// is printed when the test failed.
type JoinerProcess struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	// exit is what Wait returned, set before done closes.
	exit error
}

// StartJoiner runs bin with args and env (added to the test's environment).
func StartJoiner(t testing.TB, bin, name string, args, env []string) *JoinerProcess {
	t.Helper()
	j, err := LaunchJoiner(t, t.TempDir(), bin, name, args, env)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// LaunchJoiner is StartJoiner for a goroutine other than the test's (a
// supervisor restarting a process): it returns what went wrong instead of
// failing t, and writes the log into logDir, which the caller made on the
// test's goroutine (t.TempDir fails t, which only that goroutine may do).
func LaunchJoiner(t testing.TB, logDir, bin, name string, args, env []string) (*JoinerProcess, error) {
	j := &JoinerProcess{Name: name, done: make(chan struct{})}
	logFile, err := os.CreateTemp(logDir, name+"-*.log")
	if err != nil {
		return nil, fmt.Errorf("creating %s's log: %w", name, err)
	}
	j.LogPath = logFile.Name()
	j.cmd = exec.Command(bin, args...)
	j.cmd.Env = append(os.Environ(), env...)
	j.cmd.Stdout, j.cmd.Stderr = logFile, logFile
	if err := j.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		j.exit = j.cmd.Wait()
		logFile.Close()
		close(j.done)
	}()
	t.Cleanup(func() {
		j.Stop()
		if t.Failed() {
			t.Logf("%s log %s (last lines):\n%s", j.Name, j.LogPath, tailLines(j.LogPath, 40))
		}
	})
	return j, nil
}

// Pid is the process id.
func (j *JoinerProcess) Pid() int { return j.cmd.Process.Pid }

// Alive reports whether the process still runs.
func (j *JoinerProcess) Alive() bool {
	select {
	case <-j.done:
		return false
	default:
		return true
	}
}

// Done is closed once the process has exited.
func (j *JoinerProcess) Done() <-chan struct{} { return j.done }

// Exit is how the process ended (nil: status 0), once Done is closed.
func (j *JoinerProcess) Exit() error {
	<-j.done
	return j.exit
}

// Stop ends the process gracefully (SIGTERM), killing it after 20s.
func (j *JoinerProcess) Stop() { j.signal(syscall.SIGTERM) }

// Kill ends the process as a crash would (SIGKILL).
func (j *JoinerProcess) Kill() { j.signal(syscall.SIGKILL) }

// DumpStacks ends the process with SIGQUIT, on which the Go runtime
// writes every goroutine's stack to its log, killing it after 20s.
func (j *JoinerProcess) DumpStacks() { j.signal(syscall.SIGQUIT) }

func (j *JoinerProcess) signal(sig syscall.Signal) {
	if !j.Alive() {
		return
	}
	_ = j.cmd.Process.Signal(sig)
	select {
	case <-j.done:
	case <-time.After(20 * time.Second):
		_ = j.cmd.Process.Kill()
		<-j.done
	}
}

// LogContains reports whether the process's log holds s.
func (j *JoinerProcess) LogContains(s string) bool {
	b, err := os.ReadFile(j.LogPath)
	return err == nil && strings.Contains(string(b), s)
}

// Tail returns the last n lines of the log.
func (j *JoinerProcess) Tail(n int) string { return tailLines(j.LogPath, n) }

func tailLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
