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

// Command run is `make run`: it starts a local control plane (the real
// kube-apiserver and etcd the tests use), installs every CRD, applies the
// examples, runs the manager binary against it and shows what a user sees,
// until interrupted. Metal3 IPAM and the Cluster API in-cluster IPAM provider
// are played by the tests' stand-ins.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

func main() {
	manager := flag.String("manager", "bin/manager", "The manager binary to run.")
	examples := flag.String("examples", "examples", "The folder of examples to apply; each sub-folder is applied after namespace.yaml.")
	ipam := flag.String("ipam", "standin", `"standin" runs the IPAM stand-ins (Metal3 IPAM, Cluster API in-cluster IPAM); "none" leaves IPAM to real controllers pointed at the printed kubeconfig.`)
	flag.Parse()
	if *ipam != "standin" && *ipam != "none" {
		fmt.Fprintf(os.Stderr, "run: --ipam is standin or none, not %q\n", *ipam)
		os.Exit(2)
	}
	if err := run(*manager, *examples, *ipam == "standin"); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		os.Exit(1)
	}
}

func run(manager, examples string, ipamStandIn bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The harness logs nothing through controller-runtime but errors.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))

	sayf("Starting a local control plane (kube-apiserver and etcd from bin/k8s)")
	env, err := framework.StartControlPlane(framework.StartControlPlaneInput{})
	if err != nil {
		return err
	}
	defer func() {
		sayf("Stopping the local control plane")
		_ = env.Stop()
	}()

	workDir, err := os.MkdirTemp("", "capm3-preprov-run-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(workDir) }() // a leftover temporary directory is not worth failing the run
	kubeconfig := filepath.Join(workDir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return err
	}

	if ipamStandIn {
		sayf("IPAM: Metal3 IPAM is not running here; its stand-in from test/standins/ipamstandin allocates addresses by the upstream contract")
		standIn, err := framework.StartIPAMStandIn(env.Config)
		if err != nil {
			return err
		}
		defer func() {
			if stopErr := standIn.Stop(); stopErr != nil {
				fmt.Fprintln(os.Stderr, "IPAM stand-in:", stopErr)
			}
		}()
		sayf("IPAM: the Cluster API in-cluster IPAM provider is not running here; its stand-in from test/standins/capiipamstandin serves InClusterIPPools by the upstream contract")
		capiStandIn, err := framework.StartCAPIIPAMStandIn(env.Config)
		if err != nil {
			return err
		}
		defer func() {
			if stopErr := capiStandIn.Stop(); stopErr != nil {
				fmt.Fprintln(os.Stderr, "Cluster API IPAM stand-in:", stopErr)
			}
		}()
	} else {
		sayf("IPAM: no stand-ins; point a real Metal3 IPAM controller and Cluster API IPAM provider at %s", kubeconfig)
	}

	sayf("Applying %s", examples)
	if err := framework.ApplyExamples(ctx, env.Client, examples); err != nil {
		return err
	}

	sayf("Starting %s", manager)
	cmd := exec.CommandContext(ctx, manager, "--kubeconfig", kubeconfig, "--webhook-port=0",
		"--diagnostics-address=127.0.0.1:8080", "--insecure-diagnostics", "--health-addr=127.0.0.1:9440")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	managerDone := make(chan error, 1)
	go func() { managerDone <- cmd.Wait() }()

	if err := showWhenSettled(ctx, env.Client); err != nil && ctx.Err() == nil {
		return err
	}
	sayf("The control plane keeps running; use it with: KUBECONFIG=%s %s get bmh -A", kubeconfig, filepath.Join(framework.RepoRoot(), "bin", "k8s", "kubectl"))
	sayf("Press Ctrl-C to stop")

	select {
	case <-ctx.Done():
		<-managerDone //nolint:errcheck // the interrupt stopped the manager too: its exit error is expected
	case err := <-managerDone:
		if ctx.Err() == nil {
			return fmt.Errorf("the manager stopped: %w", err)
		}
	}
	return nil
}

func sayf(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}
