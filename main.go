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

// Command manager runs capm3-preprov: it gives BareMetalHosts paused with
// metal3.io/preprovisioning a static network configuration for their deploy
// ramdisk, rendered from Metal3 templates with addresses from Metal3 IPAM.
package main

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/controllers"
	"github.com/capm3-preprov/capm3-preprov/internal/scheme"
	"github.com/capm3-preprov/capm3-preprov/internal/webhooks"
)

type options struct {
	metricsAddr         string
	probeAddr           string
	webhookPort         int
	webhookCertDir      string
	leaderElect         bool
	leaderElectionID    string
	leaderElectionNS    string
	namespace           string
	allMachineTemplates bool
	poolPreallocations  bool
	hostConcurrency     int
	qps                 float64
	burst               int
}

func main() {
	opts := options{}
	flag.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8080", "The address the metrics endpoint binds to; 0 disables it.")
	flag.StringVar(&opts.probeAddr, "health-probe-bind-address", ":9440", "The address the health and readiness probes bind to.")
	flag.IntVar(&opts.webhookPort, "webhook-port", 9443, "The port of the webhook server; 0 runs without a webhook server.")
	flag.StringVar(&opts.webhookCertDir, "webhook-cert-dir", "",
		"The folder with the webhook server's tls.crt and tls.key (default /tmp/k8s-webhook-server/serving-certs).")
	flag.BoolVar(&opts.leaderElect, "leader-elect", false, "Enable leader election, so only one manager acts at a time.")
	flag.StringVar(&opts.leaderElectionID, "leader-election-id", "capm3-preprov-leader-election", "The name of the leader election Lease.")
	flag.StringVar(&opts.leaderElectionNS, "leader-election-namespace", "",
		"The namespace of the leader election Lease (default: the manager's own namespace when it runs in a cluster, else --namespace).")
	flag.StringVar(&opts.namespace, "namespace", "",
		"Watch and manage only this namespace (the multi-tenant install with a Role); default: all namespaces.")
	flag.BoolVar(&opts.allMachineTemplates, "all-machine-templates", false,
		"Use every Metal3MachineTemplate as a template source, not only those annotated "+preprovv1.EnabledAnnotation+`: "true".`)
	flag.BoolVar(&opts.poolPreallocations, "pool-preallocations", false,
		"Also record each host's addresses in its IPPools' spec.preAllocations (a backstop for the claims); entries are removed when the host is deleted.")
	flag.IntVar(&opts.hostConcurrency, "host-concurrency", 10, "How many hosts are reconciled at once.")
	flag.Float64Var(&opts.qps, "kube-api-qps", 20, "Maximum queries per second to the API server.")
	flag.IntVar(&opts.burst, "kube-api-burst", 30, "Maximum burst of queries to the API server.")
	zapOptions := zap.Options{}
	zapOptions.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOptions)))
	if err := run(opts); err != nil {
		ctrl.Log.Error(err, "Manager failed")
		os.Exit(1)
	}
}

func run(opts options) error {
	ctx := ctrl.SetupSignalHandler()
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	restConfig.QPS = float32(opts.qps)
	restConfig.Burst = opts.burst

	mgr, err := ctrl.NewManager(restConfig, managerOptions(opts))
	if err != nil {
		return err
	}
	if err := controllers.Setup(ctx, mgr, controllers.Options{
		AllMachineTemplates: opts.allMachineTemplates,
		PoolPreallocations:  opts.poolPreallocations,
		Host:                controller.Options{MaxConcurrentReconciles: opts.hostConcurrency},
	}); err != nil {
		return err
	}
	if opts.webhookPort != 0 {
		if err := webhooks.SetupWebhooksWithManager(mgr); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("Starting manager")
	return mgr.Start(ctx)
}

// managerOptions are the manager's options: scheme, endpoints, leader
// election and a cache that holds only what the controllers read.
func managerOptions(opts options) ctrl.Options {
	managerOpts := ctrl.Options{
		Scheme:                        scheme.New(),
		Metrics:                       metricsserver.Options{BindAddress: opts.metricsAddr},
		HealthProbeBindAddress:        opts.probeAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              opts.leaderElectionID,
		LeaderElectionNamespace:       leaderElectionNamespace(opts),
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(opts.namespace),
	}
	if opts.webhookPort != 0 {
		managerOpts.WebhookServer = webhook.NewServer(webhook.Options{Port: opts.webhookPort, CertDir: opts.webhookCertDir})
	}
	return managerOpts
}

func leaderElectionNamespace(opts options) string {
	if opts.leaderElectionNS != "" {
		return opts.leaderElectionNS
	}
	return opts.namespace
}
