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
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// stopProcess sends sig to a child process and kills it if it has not
// exited (exited closed) within grace. It reports whether it had to kill.
func stopProcess(process *os.Process, sig os.Signal, exited <-chan struct{}, grace time.Duration) (killed bool) {
	_ = process.Signal(sig)
	select {
	case <-exited:
		return false
	case <-time.After(grace):
		_ = process.Kill()
		<-exited
		return true
	}
}

// ChildProcesses finds this process's children by command name.
func ChildProcesses(name string) []int {
	var found []int
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, task := range tasks {
		data, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(field)
			if err != nil {
				continue
			}
			comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if err == nil && strings.TrimSpace(string(comm)) == name {
				found = append(found, pid)
			}
		}
	}
	return found
}

// ChildProcess finds the one child of this process with this command name.
func ChildProcess(name string) (int, error) {
	found := ChildProcesses(name)
	if len(found) != 1 {
		return 0, fmt.Errorf("found %d child processes named %s, want 1", len(found), name)
	}
	return found[0], nil
}

// waitGone waits until a child process has exited and was reaped.
func waitGone(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("process %d still there after %s", pid, timeout)
}

// ErrProcessExited is WaitForOK's answer when the process exits first.
var ErrProcessExited = errors.New("the process exited")

// WaitForOK polls GET url every 100 ms until it answers 200 OK, the
// process exits (exited is closed) or timeout passes.
func WaitForOK(ctx context.Context, url string, timeout time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	httpClient := http.Client{Timeout: 5 * time.Second}
	for {
		request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
		if err != nil {
			return err
		}
		if response, err := httpClient.Do(request); err == nil {
			_ = response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return ErrProcessExited
		case <-ctx.Done():
			return fmt.Errorf("GET %s did not answer 200 OK within %s", url, timeout)
		case <-ticker.C:
		}
	}
}
