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

import "time"

// runResult is what one run measured.
type runResult struct {
	run int
	// loadAverage is /proc/loadavg when the run started: the machine is
	// shared, and this says how busy it was.
	loadAverage string
	controller  phaseResult
	floor       phaseResult
	// managerCalls are the manager's requests in the fleet's namespace, from
	// its start until it went quiet.
	managerCalls map[apiCall]int
	// steadyCalls are the manager's requests, in any namespace, during the
	// steady window.
	steadyCalls map[apiCall]int
	floorCalls  map[apiCall]int
	// lastWrite is when the manager's last write came, after the last host
	// was done.
	lastWrite time.Duration
	memory    managerMemory
	manager   managerStats
	// restart and handoff are those scenarios', which have no floor.
	restart restartResult
	handoff handoffResult
	// deletion is the delete scenario's.
	deletion deleteResult
	// herd is the herd scenario's.
	herd herdResult
	// shards are the shard scenario's managers, by shard.
	shards map[string]shardManager
}

// phaseResult is the controller's or the floor's half of a run.
type phaseResult struct {
	// creating is how long registering the hosts took.
	creating time.Duration
	// processing is from the start of the manager (or the floor's workers)
	// to the last host done.
	processing time.Duration
	// wall is from the start of the hosts' creation to the last host done.
	wall time.Duration
	// latencies are, per host, from the start of its creation to done.
	latencies []time.Duration
	// cpu is the CPU seconds each process used while processing.
	cpu map[string]float64
	// shardWall is, per shard ("" in a fleet without shards), from the start
	// of the hosts' creation to its last host done.
	shardWall map[string]time.Duration
}

type managerMemory struct {
	peakRSS, endRSS              float64
	peakAnonRSS, peakFileRSS     float64
	peakHeapAlloc, peakHeapInuse float64
	endHeapAlloc, endHeapInuse   float64
	peakGoroutines               float64
}

// managerStats are the manager's own metrics at the end of the run.
type managerStats struct {
	cpuSeconds       float64
	reconciles       map[string]float64
	reconcileErrors  map[string]float64
	reconcileSeconds map[string]float64
	// requests are its REST client's requests by method and code.
	requests map[string]float64
}
