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

package main

import (
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine is where the numbers were measured.
type machine struct {
	cpus           int
	cpuModel       string
	memory         string
	kernel         string
	harnessGo      string
	managerGo      string
	managerBuild   string
	kubeAPIVersion string
}

func readMachine(ctx context.Context, managerBinary string) machine {
	m := machine{cpus: runtime.NumCPU(), harnessGo: runtime.Version(), cpuModel: "?", memory: "?", kernel: "?", managerGo: "?", managerBuild: "?"}
	if cpuinfo, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(cpuinfo)) {
			if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == "model name" {
				m.cpuModel = strings.TrimSpace(value)
				break
			}
		}
	}
	if meminfo, err := kibLines("/proc/meminfo"); err == nil {
		m.memory = fmt.Sprintf("%.1f GiB", meminfo["MemTotal"]/(1<<30))
	}
	if release, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(release))
	}
	if info, err := buildinfo.ReadFile(managerBinary); err == nil {
		m.managerGo = info.GoVersion
	}
	m.managerBuild = describeBinary(ctx, managerBinary)
	return m
}

// describeBinary says which binary ran: its digest and time, and the commit
// of the tree (GOFLAGS may hold -buildvcs=false, so the binary may not say).
func describeBinary(ctx context.Context, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	info, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	digest := sha256.Sum256(data)
	description := fmt.Sprintf("sha256 %x…, built %s", digest[:6], info.ModTime().UTC().Format(time.DateTime))
	if head, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		description += "; tree at " + strings.TrimSpace(string(head))
		if changes, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(changes) > 0 {
			description += " with uncommitted changes"
		}
	}
	return description
}

func (m machine) section() section {
	s := section{title: "Machine", table: table{header: []string{"what", "value"}}}
	s.table.add("CPUs (nproc)", strconv.Itoa(m.cpus))
	s.table.add("CPU model", m.cpuModel)
	s.table.add("memory", m.memory)
	s.table.add("kernel", m.kernel)
	s.table.add("Go (harness / manager binary)", m.harnessGo+" / "+m.managerGo)
	s.table.add("manager binary", m.managerBuild)
	s.table.add("kube-apiserver", m.kubeAPIVersion)
	return s
}
