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
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of CPU times in /proc/<pid>/stat: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// procStatus reads the "kB" lines of /proc/<pid>/status, in bytes.
func procStatus(pid int) (map[string]float64, error) {
	return kibLines(fmt.Sprintf("/proc/%d/status", pid))
}

// kibLines reads the "name: value kB" lines of a /proc file, in bytes.
func kibLines(path string) (map[string]float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	values := map[string]float64{}
	for line := range strings.Lines(string(data)) {
		key, rest, ok := strings.Cut(line, ":")
		fields := strings.Fields(rest)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if kib, err := strconv.ParseFloat(fields[0], 64); err == nil {
			values[key] = kib * 1024
		}
	}
	return values, nil
}

// cpuSeconds is the user and system CPU time a process has used.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields start after its ")".
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(data[end+1:]))
	// utime and stime are fields 14 and 15 of stat, 12 and 13 after ")".
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	user, err := strconv.ParseFloat(fields[11], 64)
	if err != nil {
		return 0, err
	}
	system, err := strconv.ParseFloat(fields[12], 64)
	if err != nil {
		return 0, err
	}
	return (user + system) / clockTicks, nil
}

// cpuMeter measures the CPU time processes use between two points.
type cpuMeter struct {
	pids  map[string]int
	start map[string]float64
}

func startCPUMeter(pids map[string]int) *cpuMeter {
	meter := &cpuMeter{pids: pids, start: map[string]float64{}}
	for name, pid := range pids {
		if seconds, err := cpuSeconds(pid); err == nil {
			meter.start[name] = seconds
		}
	}
	return meter
}

// used is the CPU seconds each process used since the meter started.
func (m *cpuMeter) used() map[string]float64 {
	used := map[string]float64{}
	for name, pid := range m.pids {
		if seconds, err := cpuSeconds(pid); err == nil {
			used[name] = seconds - m.start[name]
		}
	}
	return used
}
