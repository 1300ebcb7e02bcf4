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

// Command bench measures capm3-preprov at fleet scale: on a fresh local
// control plane it registers N paused hosts, runs bin/manager as its own
// process, and measures how long until every host is unpaused with its
// Secret, the manager's API requests (from the audit log), its writes in
// steady state and its memory; then, with the manager stopped, it does the
// same object writes with a tight client loop (the floor) to compare.
//
//	go run ./test/bench -hosts 1000 -runs 3 -scenario plain -out docs/performance.md
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

const (
	scenarioPlain    = "plain"
	scenarioHardware = "hardware"
	scenarioRestart  = "restart"
	scenarioHandoff  = "handoff"
	scenarioShard    = "shard"
	scenarioDelete   = "delete"
	scenarioHerd     = "herd"
)

var scenarios = []string{scenarioPlain, scenarioHardware, scenarioRestart, scenarioHandoff, scenarioShard, scenarioDelete, scenarioHerd}

type config struct {
	hosts    int
	runs     int
	scenario string
	manager  string
	// env is the manager's environment from its Deployment (GOMEMLIMIT).
	env []string
	out string
	// heapProfiles is where each manager's heap profile goes, taken when
	// its memory is read; "" takes none.
	heapProfiles string
	steady       time.Duration
	quiet        time.Duration
	timeout      time.Duration
	// deleteLimit, in the delete scenario, is how long the harness waits
	// for the manager's fleet to be gone before it reports what is left; 0
	// waits until the run's timeout, which fails the run.
	deleteLimit time.Duration
	limits      clientLimits
	// poolPreallocations runs the manager with --pool-preallocations.
	poolPreallocations bool
	// clusterAPIPools takes every host's addresses from InClusterIPPools
	// (the in-cluster provider's stand-in) instead of Metal3 IPPools.
	clusterAPIPools bool
}

// variant names the options of a run besides its scenario, "" for none.
func (cfg config) variant() string {
	var words []string
	if cfg.poolPreallocations {
		words = append(words, "pool-preallocations")
	}
	if cfg.clusterAPIPools {
		words = append(words, "cluster-api-pools")
	}
	return strings.Join(words, " ")
}

// hasFloor is whether the run measures the floor beside the manager: the
// floor creates Metal3 IPClaims only, so a fleet on Cluster API pools is
// compared with the plain scenario's floor instead.
func (cfg config) hasFloor() bool { return !cfg.clusterAPIPools }

// managerArgs are the manager's flags the run's options ask for.
func (cfg config) managerArgs() []string {
	if cfg.poolPreallocations {
		return []string{"--pool-preallocations"}
	}
	return nil
}

// managerFlags are managerArgs as the reports write them after other
// flags: each with a space before it.
func (cfg config) managerFlags() string {
	return strings.Join(append([]string{""}, cfg.managerArgs()...), " ")
}

// clientLimits are the manager's client rate limits and workers; the floor
// uses the same.
type clientLimits struct {
	qps         float64
	burst       int
	concurrency int
}

func main() {
	// The harness logs nothing through controller-runtime but errors.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	cfg := config{}
	flag.IntVar(&cfg.hosts, "hosts", 1000, "How many hosts to register.")
	flag.IntVar(&cfg.runs, "runs", 1, "How many runs, each on a fresh control plane.")
	flag.StringVar(&cfg.scenario, "scenario", scenarioPlain,
		"plain: hosts as registered; hardware: hosts also carry an inspected status.hardware; "+
			"restart: a fresh manager, then a leader change, on a set-up fleet; "+
			"handoff: a simulated CAPM3 provisions every set-up host; "+
			"shard: the hosts split between two managers with --watch-filter, each with its own Lease and identity, against two floors; "+
			"delete: every host of a set-up fleet deleted at once with the manager running, against the same deletes with none; "+
			"herd: the hosts on one pool of 10 addresses, the 10 set up then deleted: the claim writes per freed address.")
	flag.StringVar(&cfg.manager, "manager", "bin/manager", "The manager binary.")
	deployment := flag.String("deployment", "config/manager/manager.yaml",
		"The manager's Deployment: the manager runs with its container's environment (GOMEMLIMIT).")
	flag.StringVar(&cfg.out, "out", "", "Write the results into this Markdown file (e.g. docs/performance.md).")
	flag.StringVar(&cfg.heapProfiles, "heap-profiles", "",
		"Save each manager's heap profile (go tool pprof) into this folder when its memory is read, at the end of the steady window.")
	flag.DurationVar(&cfg.steady, "steady", time.Minute, "How long to count the manager's writes once every host is done.")
	flag.DurationVar(&cfg.quiet, "quiet", 10*time.Second,
		"After the steady window, the manager runs until it has written nothing for this long; the requests per host count until then.")
	flag.DurationVar(&cfg.timeout, "timeout", 45*time.Minute, "The limit of one run.")
	flag.DurationVar(&cfg.deleteLimit, "delete-limit", 0,
		"delete scenario: stop waiting for the manager's fleet to be gone this long after the first delete, and report what is left "+
			"(for a manager that never finishes); 0 waits until -timeout, which fails the run.")
	flag.Float64Var(&cfg.limits.qps, "qps", 20, "The manager's --kube-api-qps, and the floor's.")
	flag.IntVar(&cfg.limits.burst, "burst", 30, "The manager's --kube-api-burst, and the floor's.")
	flag.IntVar(&cfg.limits.concurrency, "concurrency", 10, "The manager's --host-concurrency, and the floor's workers.")
	flag.BoolVar(&cfg.poolPreallocations, "pool-preallocations", false,
		"Run the manager with --pool-preallocations; the delete scenario then also waits until the pools hold none of the fleet's entries.")
	flag.BoolVar(&cfg.clusterAPIPools, "cluster-api-pools", false,
		"Take the addresses from two InClusterIPPools served by the in-cluster provider's stand-in instead of Metal3 IPPools (plain scenario, no floor).")
	flag.Parse()
	env, err := deploymentEnv(*deployment)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	cfg.env = env
	if err := validate(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		flag.Usage()
		os.Exit(2)
	}
	if cfg.heapProfiles != "" {
		if err := os.MkdirAll(cfg.heapProfiles, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func validate(cfg config) error {
	switch {
	case cfg.hosts < 1 || cfg.hosts > 60000:
		return fmt.Errorf("-hosts must be between 1 and 60000 (the pools are /16), not %d", cfg.hosts)
	case cfg.runs < 1:
		return errors.New("-runs must be at least 1")
	case !slices.Contains(scenarios, cfg.scenario):
		return fmt.Errorf("-scenario must be one of %s, not %q", strings.Join(scenarios, ", "), cfg.scenario)
	case cfg.scenario == scenarioHerd && cfg.hosts <= herdPoolSize:
		return fmt.Errorf("-scenario %s needs more than %d hosts, the size of its pool", scenarioHerd, herdPoolSize)
	case cfg.scenario == scenarioShard && cfg.hosts < len(shardNames):
		return fmt.Errorf("-scenario %s needs at least %d hosts, one per shard", scenarioShard, len(shardNames))
	case cfg.clusterAPIPools && (cfg.scenario != scenarioPlain || cfg.poolPreallocations):
		return errors.New("-cluster-api-pools runs the plain scenario only, without -pool-preallocations (Cluster API pools have no spec.preAllocations)")
	case cfg.deleteLimit < 0 || (cfg.deleteLimit > 0 && cfg.scenario != scenarioDelete):
		return errors.New("-delete-limit is a positive duration of the delete scenario")
	case cfg.limits.qps <= 0 || cfg.limits.burst < 1 || cfg.limits.concurrency < 1:
		return errors.New("-qps, -burst and -concurrency must be positive")
	}
	if _, err := os.Stat(cfg.manager); err != nil {
		return fmt.Errorf("no manager binary (go build -o bin/manager .): %w", err)
	}
	return nil
}

// run does every run and reports them. Ctrl-C stops the current run and
// cleans up; a second Ctrl-C kills the harness (the manager dies with it).
func run(cfg config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()

	r := report{
		cfg:     cfg,
		command: "go run ./test/bench " + strings.Join(os.Args[1:], " "),
		date:    time.Now(),
		machine: readMachine(ctx, cfg.manager),
	}
	for i := 1; i <= cfg.runs; i++ {
		result, version, err := runOnce(ctx, cfg, i)
		if err != nil {
			return err
		}
		r.machine.kubeAPIVersion = version
		r.runs = append(r.runs, result)
		switch cfg.scenario {
		case scenarioRestart:
			progressf("run %d: restart caught up after %.1f s, leader change after %.1f s", i,
				result.restart.restart.duration.Seconds(), result.restart.takeover.duration.Seconds())
		case scenarioHandoff:
			progressf("run %d: every claim handed over %.1f s after the simulated CAPM3 started", i, result.handoff.handedOver.Seconds())
		case scenarioDelete:
			progressf("run %d: fleet deleted in %.1f s with the manager, %.1f s without", i,
				result.deletion.controller.Seconds(), result.deletion.floor.Seconds())
		case scenarioHerd:
			progressf("run %d: %d freed addresses taken in %.1f s, %.1f IPClaim writes per freed address", i,
				result.herd.freed, result.herd.taken.Seconds(), claimWritesPerFreedAddress(result))
		default:
			progressf("run %d: controller %.1f s, floor %.1f s", i, result.controller.wall.Seconds(), result.floor.wall.Seconds())
		}
	}
	var text bytes.Buffer
	for _, s := range r.sections() {
		s.text(&text)
	}
	if _, err := os.Stdout.Write(text.Bytes()); err != nil {
		return err
	}
	if cfg.out == "" {
		return nil
	}
	return writeMarkdown(cfg.out, r)
}
