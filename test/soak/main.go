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

// The soak (make soak) runs a seeded random sequence of operations against
// bin/manager as a process (under config/rbac's permissions), Metal3 IPAM's
// stand-in, the garbage collector and a model of BMO (test/standins/bmomodel):
// hosts registered, deleted, registered again with a new MAC, relabelled;
// templates rolled and edited; pools grown and shrunk; hosts inspected,
// provisioned (by hand, through a HostClaim, by CAPM3 with and without a
// Metal3Data), released, deprovisioned, powered off and on; the manager
// killed and IPAM stopped. The sequence depends on the seed only. At quiet
// points it checks that no address is on two machines, every host paused
// for us is set up or explained, nothing is left of deleted hosts, and the
// manager neither panicked nor was refused a request. A failure prints the
// seed, the step and the operations so far: `make soak SOAK_SEED=<seed>
// SOAK_STEPS=<step>` replays them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

const (
	// quiet is how long nothing may change before a quiet point checks;
	// confirmQuiet how long before a failed check is checked again, so a
	// controller's delayed retry is not taken for a failure.
	quiet        = time.Second
	confirmQuiet = 5 * time.Second
	// settleTimeout bounds the wait for a quiet point.
	settleTimeout = 2 * time.Minute
)

type soak struct {
	*cluster
	managerLog newLines
	// registered holds every host name ever registered.
	registered map[string]bool
	// done lists the operations so far, as printed.
	done []string
	// found lists each broken invariant once, with the step it was first
	// seen at (-keep-going).
	found []string
	seen  map[string]bool
	// managerKilled: the soak killed the manager and has not started it again.
	managerKilled bool
	// artifacts is where the logs and the objects of broken quiet points go.
	artifacts string
}

func main() {
	steps := flag.Int("steps", 1000, "How many operations to run.")
	seed := flag.Uint64("seed", 0, "The seed of the sequence; 0 draws one (printed first).")
	keepGoing := flag.Bool("keep-going", false,
		"Report broken invariants and go on to the last step (each once, with the step first seen), rather than stop at the first.")
	manager := flag.String("manager", filepath.Join(framework.RepoRoot(), "bin", "manager"), "The manager binary.")
	artifacts := flag.String("artifacts", filepath.Join(framework.RepoRoot(), "out", "soak"),
		"Where the manager's log, the API server's log and audit log go.")
	flag.Parse()
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	fmt.Printf("soak: seed %d, %d steps (replay: make soak SOAK_SEED=%d SOAK_STEPS=%d)\n", *seed, *steps, *seed, *steps)
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	if err := run(*seed, *steps, *keepGoing, *manager, *artifacts); err != nil {
		fmt.Fprintf(os.Stderr, "soak: seed %d: %v\n", *seed, err)
		os.Exit(1)
	}
}

func run(seed uint64, steps int, keepGoing bool, managerBinary, artifacts string) (err error) {
	ctx := context.Background()
	if err = os.MkdirAll(artifacts, 0o755); err != nil {
		return err
	}
	if err = removeDumps(artifacts); err != nil {
		return err
	}
	started := time.Now()
	c, err := startCluster(ctx, managerBinary, artifacts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.close()) }()
	s := &soak{cluster: c, managerLog: newLines{path: c.manager.LogPath}, registered: map[string]bool{}, seen: map[string]bool{}, artifacts: artifacts}
	plan := newPlanner(seed)
	if err := s.createFleet(ctx, plan.book); err != nil {
		return err
	}
	fmt.Printf("soak: control plane, IPAM, BMO's model and the manager up in %s; artifacts in %s\n",
		time.Since(started).Round(time.Millisecond), artifacts)
	started = time.Now()
	quietPoints := 0
	for step := 1; step <= steps; step++ {
		o := plan.next()
		if step == steps {
			o = op{kind: opQuietPoint}
		}
		err := s.step(ctx, step, o, plan.book.templates)
		var broken invariantErrors
		if keepGoing && errors.As(err, &broken) {
			s.record(seed, step, broken)
			continue
		}
		if err != nil {
			return s.failure(seed, step, err)
		}
		if o.kind == opQuietPoint {
			quietPoints++
		}
	}
	elapsed := time.Since(started)
	if len(s.found) > 0 {
		return fmt.Errorf("%d operations in %s; invariants broken (first seen at):\n%s", steps, elapsed.Round(time.Second), strings.Join(s.found, "\n"))
	}
	fmt.Printf("soak: seed %d: %d operations, %d quiet points, all invariants held, in %s (%s an operation)\n",
		seed, steps, quietPoints, elapsed.Round(time.Second), (elapsed / time.Duration(steps)).Round(time.Millisecond))
	return nil
}

// step runs one operation, or checks the invariants at a quiet point.
func (s *soak) step(ctx context.Context, step int, o op, templates [groups]templateGroup) error {
	began := time.Now()
	var note string
	var err error
	if o.kind == opQuietPoint {
		note, err = s.quietPoint(ctx, step)
	} else {
		note, err = s.execute(ctx, o, templates)
		if o.kind == opRegister || o.kind == opRecreate {
			for _, name := range o.hosts {
				s.registered[name] = true
			}
		}
	}
	line := fmt.Sprintf("%4d %s", step, o)
	if note != "" {
		line += " (" + note + ")"
	}
	line += fmt.Sprintf(" [%s]", time.Since(began).Round(time.Millisecond))
	s.done = append(s.done, line)
	fmt.Println(line)
	return err
}

// quietPoint starts what is down, waits until everything settled and
// checks the invariants; a broken one is checked again after a longer quiet.
func (s *soak) quietPoint(ctx context.Context, step int) (string, error) {
	if !s.ipam.Running() {
		if err := s.ipam.Start(); err != nil {
			return "", err
		}
	}
	if !s.manager.Running() {
		if !s.managerKilled {
			return "", fmt.Errorf("the manager exited by itself; see %s", s.manager.LogPath)
		}
		if err := s.manager.Start(); err != nil {
			return "", err
		}
		s.managerKilled = false
	}
	snap, err := s.settle(ctx, quiet, settleTimeout)
	if err != nil {
		return "", err
	}
	problems, err := s.check(ctx, snap, s.registered)
	if err != nil || len(problems) == 0 {
		return s.summary(snap), err
	}
	if snap, err = s.settle(ctx, confirmQuiet, settleTimeout); err != nil {
		return "", err
	}
	confirmed, err := s.check(ctx, snap, s.registered)
	if err != nil {
		return "", err
	}
	// What the logs showed once stays shown.
	for _, problem := range problems {
		if strings.HasPrefix(problem, "panic") || strings.HasPrefix(problem, "RBAC") {
			confirmed = append(confirmed, problem)
		}
	}
	if len(confirmed) > 0 {
		path, err := s.dump(step, snap)
		if err != nil {
			return "", err
		}
		return s.summary(snap) + "; objects in " + path, invariantErrors(confirmed)
	}
	return s.summary(snap), nil
}

// summary says what the fleet looks like at a quiet point.
func (s *soak) summary(snap *snapshot) string {
	states := map[string]int{}
	for _, host := range snap.hosts {
		state := string(host.Status.Provisioning.State)
		if state == "" {
			state = "paused"
		}
		states[state]++
	}
	return fmt.Sprintf("%d hosts %v, %d machines using addresses, %d IPAddresses", len(snap.hosts), states, len(snap.uses), len(snap.addresses))
}

// failure is the report of a failed run: the seed, the step and the
// operations so far.
func (s *soak) failure(seed uint64, step int, err error) error {
	return fmt.Errorf("failed at step %d: %w\nreplay: make soak SOAK_SEED=%d SOAK_STEPS=%d\noperations so far:\n%s\nlogs: %s",
		step, err, seed, step, strings.Join(s.done, "\n"), filepath.Dir(s.manager.LogPath))
}

// invariantErrors are the invariants a quiet point found broken.
type invariantErrors []string

func (b invariantErrors) Error() string {
	return "invariants broken:\n  " + strings.Join(b, "\n  ")
}

// record notes the invariants broken at a step, each the first time.
func (s *soak) record(seed uint64, step int, broken invariantErrors) {
	for _, problem := range broken {
		if !s.seen[problem] {
			s.seen[problem] = true
			s.found = append(s.found, fmt.Sprintf("  step %d (replay: make soak SOAK_SEED=%d SOAK_STEPS=%d): %s", step, seed, step, problem))
			fmt.Printf("     broken: %s\n", problem)
		}
	}
}
