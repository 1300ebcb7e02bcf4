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

package ramdiskhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotRoot is returned where network namespaces are needed and the test
// does not run as root: creating namespaces, veth pairs and addresses needs
// CAP_NET_ADMIN and CAP_SYS_ADMIN. CI runs as root.
var ErrNotRoot = errors.New("booting hosts in network namespaces needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN to create namespaces, veth pairs and addresses); CI runs as root")

// requireRoot fails with ErrNotRoot unless the process can make namespaces.
func requireRoot() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("the ip command (Debian package iproute2) is missing: %w", err)
	}
	return nil
}

// ip runs one ip command and returns its output; the error quotes it.
func ip(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	command := exec.CommandContext(ctx, "ip", args...)
	command.Stdout, command.Stderr = &stdout, &stderr
	if err := command.Run(); err != nil {
		return "", fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// inNamespace runs fn on a thread moved into the named network namespace,
// so the sockets fn creates belong to it (a socket stays in the namespace
// it was made in, whatever thread uses it later). The thread goes back to
// its own namespace afterwards; if it cannot, it stays locked to the
// goroutine made for fn, and Go ends the thread with that goroutine, so no
// other goroutine runs in the wrong namespace.
func inNamespace(namespace string, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- lockedInNamespace(namespace, fn) }()
	return <-done
}

func lockedInNamespace(namespace string, fn func() error) error {
	runtime.LockOSThread()
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer func() { _ = own.Close() }()
	target, err := os.Open("/run/netns/" + namespace)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("network namespace %s: %w", namespace, err)
	}
	defer func() { _ = target.Close() }()
	if err = unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering network namespace %s: %w", namespace, err)
	}
	fnErr := fn()
	if err = unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		return errors.Join(fnErr, fmt.Errorf("leaving network namespace %s: %w", namespace, err))
	}
	runtime.UnlockOSThread()
	return fnErr
}
