/*
Copyright The capm3-preprov Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

const (
	// managerReadyTimeout bounds a start until /readyz answers.
	managerReadyTimeout = time.Minute
	// managerStopTimeout is the grace period of a stop, as a Pod's
	// terminationGracePeriodSeconds (10 s in config/manager) plus slack.
	managerStopTimeout = 30 * time.Second
)

// ManagerProcess is a manager running as its own process, as in a Pod,
// under an identity of its own (the kubeconfig in Args): bin/manager, or a
// test binary that runs our controllers when Env tells it to. It can be
// started, stopped (SIGTERM), killed (SIGKILL) and started again; it never
// outlives the process that started it. The first start truncates its log
// file, later starts append to it.
type ManagerProcess struct {
	Name    string
	Binary  string
	LogPath string
	// Args are the flags besides the diagnostics (metrics, plain HTTP on
	// loopback) and health probe addresses, which each start picks afresh.
	Args []string
	// Env is added to this process's environment.
	Env []string

	cmd            *exec.Cmd
	exited         chan struct{}
	exitErr        error
	metricsAddress string
	started        bool
}

// Start starts the process with fresh metrics and health probe ports and
// waits until /readyz answers.
func (m *ManagerProcess) Start() error {
	if m.Running() {
		return fmt.Errorf("%s is already running (pid %d)", m.Name, m.PID())
	}
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	probe := fmt.Sprintf("127.0.0.1:%d", ports[0])
	m.metricsAddress = fmt.Sprintf("127.0.0.1:%d", ports[1])
	args := append(append([]string{}, m.Args...),
		"--diagnostics-address="+m.metricsAddress, "--insecure-diagnostics", "--health-addr="+probe)
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !m.started {
		flags |= os.O_TRUNC
	}
	logFile, err := os.OpenFile(m.LogPath, flags, 0o644)
	if err != nil {
		return err
	}
	m.started = true
	if _, err = fmt.Fprintf(logFile, "==> %s: %s %s\n", time.Now().Format(time.RFC3339Nano), m.Binary, strings.Join(args, " ")); err != nil {
		_ = logFile.Close() // the write has failed already
		return err
	}
	cmd := exec.Command(m.Binary, args...) //nolint:noctx // it runs until Stop or Kill, not for the length of a context
	cmd.Env = append(os.Environ(), m.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The manager must never outlive the harness, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close() // only the line above was written
		return fmt.Errorf("starting %s: %w", m.Binary, err)
	}
	exited := make(chan struct{})
	go func() {
		m.exitErr = cmd.Wait()
		// The log is for people; the exit is also in m.exitErr.
		_, _ = fmt.Fprintf(logFile, "==> %s: pid %d exited: %v\n", time.Now().Format(time.RFC3339Nano), cmd.Process.Pid, m.exitErr)
		_ = logFile.Close()
		close(exited)
	}()
	m.cmd, m.exited = cmd, exited
	return m.waitReady("http://" + probe + "/readyz")
}

func (m *ManagerProcess) waitReady(url string) error {
	err := WaitForOK(context.Background(), url, managerReadyTimeout, m.exited)
	if errors.Is(err, ErrProcessExited) {
		return fmt.Errorf("%s exited before it was ready; see %s", m.Name, m.LogPath)
	}
	if err != nil {
		return fmt.Errorf("%s not ready: %w; see %s", m.Name, err, m.LogPath)
	}
	return nil
}

// Stop sends SIGTERM, as a Pod's deletion does (the manager releases its
// lease), kills the process if it is still there after a grace period,
// and returns how it exited.
func (m *ManagerProcess) Stop() error {
	if !m.Running() {
		return nil
	}
	if stopProcess(m.cmd.Process, syscall.SIGTERM, m.exited, managerStopTimeout) {
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", m.Name, managerStopTimeout)
	}
	if m.exitErr != nil {
		return fmt.Errorf("%s exited on SIGTERM with %w; see %s", m.Name, m.exitErr, m.LogPath)
	}
	return nil
}

// Kill sends SIGKILL: the process gets no chance to finish a step or to
// release its lease.
func (m *ManagerProcess) Kill() error {
	if !m.Running() {
		return errors.New(m.Name + " is not running")
	}
	if err := m.cmd.Process.Kill(); err != nil {
		return err
	}
	<-m.exited
	return nil
}

// Running reports whether the process was started and has not exited.
func (m *ManagerProcess) Running() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// PID is the process id of the last start.
func (m *ManagerProcess) PID() int {
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Metrics scrapes the metrics endpoint of the last start.
func (m *ManagerProcess) Metrics(ctx context.Context) (Metrics, error) {
	return ScrapeMetrics(ctx, "http://"+m.metricsAddress+"/metrics")
}
