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

package agent

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// hardwareManager is an agent hardware manager (hardwaremanager/veth_nics.py
// with its entry point) that counts the host's veth NIC as a NIC: the agent
// lists only interfaces with a /sys/class/net/<nic>/device link, which a
// veth lacks, and Ironic refuses an inventory without interfaces. It is
// written into the agent's work folder and found through PYTHONPATH, so
// the root stays as Debian installed it.
//
//go:embed hardwaremanager
var hardwareManager embed.FS

// Agent is ironic-python-agent from the root, running in a host's network
// namespace as the host's ramdisk would after its network came up.
type Agent struct {
	// LogPath is the agent's log (its stderr).
	LogPath string
	process *framework.ProcessGroup
}

// StartAgent runs `ironic-python-agent` in the root, in the host's network
// namespace, with the kernel parameters Ironic wrote into the host's ISO as
// its /proc/cmdline: the agent reads ipa-api-url, ipa-agent-token,
// ipa-inspection-callback-url and the inspection's options from there, as
// it does in the ramdisk. work (the agent's folder of the machine's) holds
// the command line and the log.
func StartAgent(ctx context.Context, root *ironic.Root, namespace, work string, kernelParams map[string]string) (*Agent, error) {
	if err := ironic.RequireRoot(); err != nil {
		return nil, err
	}
	if len(kernelParams) == 0 {
		return nil, errors.New("the ISO has no kernel parameters: the agent would not know Ironic's URL")
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	cmdline := filepath.Join(work, "cmdline")
	if err := os.WriteFile(cmdline, []byte(ironic.KernelCommandLine(kernelParams)+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.CopyFS(work, hardwareManager); err != nil {
		return nil, fmt.Errorf("installing the agent's hardware manager: %w", err)
	}
	a := &Agent{LogPath: filepath.Join(work, "ironic-python-agent.log")}
	log, err := os.Create(a.LogPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = log.Close() }() // an os.File buffers nothing
	where := ironic.Chroot{Work: work, Cmdline: cmdline, NetNS: namespace}
	// It runs until Stop: ctx bounds only the start.
	command := root.Command(context.WithoutCancel(ctx), where, "ironic-python-agent")
	command.Env = append(os.Environ(), "PYTHONPATH="+path.Join(ironic.WorkMount, "hardwaremanager"))
	if a.process, err = framework.StartProcessGroup(command, log); err != nil {
		return nil, err
	}
	return a, nil
}

// Running says whether the agent is still there.
func (a *Agent) Running() bool {
	return a.process.Running()
}

// WaitForLog waits until the agent's log holds text count times, for at
// most timeout, and fails at once when the agent exits.
func (a *Agent) WaitForLog(ctx context.Context, text string, count int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		log, err := os.ReadFile(a.LogPath)
		if err != nil {
			return err
		}
		seen := strings.Count(string(log), text)
		if seen >= count {
			return nil
		}
		select {
		case <-a.process.Exited():
			return fmt.Errorf("the agent exited (%s) after logging %q %d times, not %d", a.process.State(), text, seen, count)
		case <-ctx.Done():
			return fmt.Errorf("the agent logged %q %d times, not %d, within %s", text, seen, count, timeout)
		case <-ticker.C:
		}
	}
}

// Stop ends the agent.
func (a *Agent) Stop() {
	a.process.Stop()
}

// String is the end of the agent's log, for a failed test.
func (a *Agent) String() string {
	return fmt.Sprintf("the end of %s:\n%s", a.LogPath, ironic.FileTail(a.LogPath, 60))
}
