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

package ironic

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// service is one of the suite's OpenStack processes (ironic,
// ironic-inspector): its database made first by its dbsync tool, then run
// in a process group of its own, so stop reaches any worker it forks, and
// killed with the test process if that dies.
type service struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startService runs dbsync to its end, then starts the service; both write
// to log.
func startService(ctx context.Context, log *os.File, dbsync []string, command ...string) (*service, error) {
	migrate := exec.CommandContext(ctx, dbsync[0], dbsync[1:]...)
	migrate.Stdout, migrate.Stderr = log, log
	if err := migrate.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w (log: %s)", strings.Join(dbsync, " "), err, log.Name())
	}
	cmd := exec.Command(command[0], command[1:]...) //nolint:noctx // it runs until stop; ctx bounds only the start
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", command[0], err)
	}
	p := &service{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // how it ended is in cmd.ProcessState
		close(p.exited)
	}()
	return p, nil
}

// running says whether the process is still there.
func (p *service) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after 10 s.
func (p *service) stop() {
	// The negative pid is the process group.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}
