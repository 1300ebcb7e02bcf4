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
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// ProcessGroup is one long-running command of a test (Ironic, its
// inspector, the agent) in a process group of its own, so Stop reaches any
// worker it forks, and killed with the test process if that dies.
type ProcessGroup struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartProcessGroup starts cmd, writing its output to log.
func StartProcessGroup(cmd *exec.Cmd, log *os.File) (*ProcessGroup, error) {
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", strings.Join(cmd.Args, " "), err)
	}
	p := &ProcessGroup{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // how it ended is in cmd.ProcessState
		close(p.exited)
	}()
	return p, nil
}

// Exited is closed when the command has exited.
func (p *ProcessGroup) Exited() <-chan struct{} {
	return p.exited
}

// Running says whether the command is still there.
func (p *ProcessGroup) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// State is how the command ended ("exit status 1"), or "running".
func (p *ProcessGroup) State() string {
	if p.Running() {
		return "running"
	}
	return p.cmd.ProcessState.String()
}

// Stop ends the process group: SIGTERM, then SIGKILL after 10 s.
func (p *ProcessGroup) Stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM) // the negative pid is the group
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}
