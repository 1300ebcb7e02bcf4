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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// RootHint says how to build the root.
const RootHint = "build it with hack/debian13-root.sh (as root; make test, make test-e2e and make test-inspection run it)"

// Root is the Debian 13 root: a folder with its packages installed (Ironic
// 29, ironic-python-agent, cloud-init and what Ironic builds ISOs with).
type Root struct {
	Dir string
}

// FindRoot returns bin/debian13-root, or an error naming the script when it
// is missing or stale (hack/debian13-root.sh --check).
func FindRoot(ctx context.Context) (*Root, error) {
	repo := framework.RepoRoot()
	check := exec.CommandContext(ctx, filepath.Join(repo, "hack", "debian13-root.sh"), "--check")
	if out, err := check.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("the Debian 13 root: %s: %s", strings.TrimSpace(string(out)), RootHint)
	}
	return &Root{Dir: filepath.Join(repo, "bin", "debian13-root")}, nil
}

// Chroot is where a command runs in the root. Each command gets a mount
// namespace of its own, so its mounts vanish with it and concurrent
// commands never see each other's /mnt, /tmp or /run.
type Chroot struct {
	// Work is a folder of the machine's, mounted at /mnt in the root: the
	// configuration, database and logs the command reads and writes.
	Work string
	// Cmdline, when set, is a file of the machine's mounted over the root's
	// /proc/cmdline: the kernel command line the agent reads its
	// parameters from.
	Cmdline string
	// NetNS, when set, is the network namespace (ip netns) the command runs
	// in; `ip netns exec` also mounts that namespace's /sys, which the root
	// then sees.
	NetNS string
}

// WorkMount is where Chroot.Work appears in the root.
const WorkMount = "/mnt"

// chrootScript mounts /proc, /sys, /dev, a fresh /tmp and /run and the
// work folder into the root, the command line over /proc/cmdline, and
// runs the command chrooted. It runs in the mount namespace unshare makes.
const chrootScript = `set -e
root=$1 work=$2 cmdline=$3
shift 3
mount -t proc none "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs none "$root/tmp"
mount -t tmpfs none "$root/run"
mount --bind "$work" "$root` + WorkMount + `"
if [ -n "$cmdline" ]; then mount --bind "$cmdline" "$root/proc/cmdline"; fi
exec chroot "$root" "$@"
`

// Command is args run in the root as Chroot says: [ip netns exec <ns>]
// unshare --mount sh -c <chrootScript> ... chroot <root> args. Each step
// execs the next, so the process is the command's own.
func (r *Root) Command(ctx context.Context, where Chroot, args ...string) *exec.Cmd {
	command := []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", chrootScript, "sh", r.Dir, where.Work, where.Cmdline}
	if where.NetNS != "" {
		command = append([]string{"ip", "netns", "exec", where.NetNS}, command...)
	}
	command = append(command, args...)
	return exec.CommandContext(ctx, command[0], command[1:]...)
}

// RequireRoot fails unless the process can make mount namespaces and chroot.
func RequireRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("running Ironic and the agent in the Debian 13 root needs root (mount namespaces, chroot, network namespaces): " +
			"run the tests as root, after hack/debian13-root.sh has built the root")
	}
	return nil
}

// run runs a command in the root to its end; the error holds its output.
func run(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.Join(fmt.Errorf("%s: %w", strings.Join(cmd.Args[len(cmd.Args)-3:], " "), err), errors.New(lastLines(string(out), 20)))
	}
	return nil
}

// lastLines is the end of a text.
func lastLines(text string, count int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-count):], "\n")
}

// FileTail is the end of a file (a log), for errors and failed tests.
func FileTail(path string, count int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return lastLines(string(data), count)
}
