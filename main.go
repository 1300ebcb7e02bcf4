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
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capiflags "sigs.k8s.io/cluster-api/util/flags"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/controllers"
	"github.com/capm3-preprov/capm3-preprov/internal/scheme"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/webhooks"
)

type options struct {
	// diagnostics holds CAPI's --diagnostics-address, --insecure-diagnostics
	// and TLS flags.
	diagnostics         capiflags.ManagerOptions
	healthAddr          string
	profilerAddress     string
	webhookPort         int
	webhookCertDir      string
	leaderElect         bool
	leaderElectionID    string
	leaderElectionNS    string
	namespace           string
	watchFilter         string
	allMachineTemplates bool
	poolPreallocations  bool
	hostConcurrency     int
	inspectionStall     time.Duration
	ramdiskEndpoints    []string
	qps                 float64
	burst               int

	// metricsBindAddress is the deprecated --metrics-bind-address.
	metricsBindAddress string
}

// Deprecated flags, kept for one release.
const (
	metricsBindAddressFlag     = "metrics-bind-address"
	healthProbeBindAddressFlag = "health-probe-bind-address"
)

func main() {
	opts := options{}
	zapOptions := zap.Options{}
	fs := newFlagSet(os.Args[0], &opts, &zapOptions)
	_ = fs.Parse(os.Args[1:]) // ExitOnError

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOptions)))
	if err := resolveDeprecatedFlags(fs, &opts); err != nil {
		ctrl.Log.Error(err, "Invalid flags")
		os.Exit(2)
	}
	ramdiskEndpoints, err := parseRamdiskEndpoints(opts)
	if err != nil {
		ctrl.Log.Error(err, "Invalid flags")
		os.Exit(2)
	}
	if err := run(opts, ramdiskEndpoints); err != nil {
		ctrl.Log.Error(err, "Manager failed")
		os.Exit(1)
	}
}

// newFlagSet is every flag of the manager: ours, --kubeconfig and the
// logger's (Go flags, which controller-runtime defines).
func newFlagSet(name string, opts *options, zapOptions *zap.Options) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ExitOnError)
	initFlags(fs, opts)
	goFlags := flag.NewFlagSet(name, flag.ExitOnError)
	config.RegisterFlags(goFlags)
	zapOptions.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)
	return fs
}

// initFlags defines the manager's flags, named as CAPI providers and CAPM3
// name theirs.
func initFlags(fs *pflag.FlagSet, opts *options) {
	capiflags.AddManagerOptions(fs, &opts.diagnostics)
	fs.StringVar(&opts.healthAddr, "health-addr", ":9440", "The address the health and readiness probes (/healthz, /readyz) bind to.")
	fs.StringVar(&opts.profilerAddress, "profiler-address", "",
		"The address Go's pprof profiler binds to (e.g. localhost:6060); default: no profiler.")
	fs.IntVar(&opts.webhookPort, "webhook-port", 9443, "The port of the webhook server; 0 runs without a webhook server.")
	fs.StringVar(&opts.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs",
		"The folder with the webhook server's tls.crt and tls.key.")
	fs.BoolVar(&opts.leaderElect, "leader-elect", false, "Enable leader election, so only one manager acts at a time.")
	fs.StringVar(&opts.leaderElectionID, "leader-election-id", "capm3-preprov-leader-election", "The name of the leader election Lease.")
	fs.StringVar(&opts.leaderElectionNS, "leader-election-namespace", "",
		"The namespace of the leader election Lease (default: the manager's own namespace when it runs in a cluster, else --namespace).")
	fs.StringVar(&opts.namespace, "namespace", "",
		"Watch and manage only this namespace (the multi-tenant install with a Role); default: all namespaces.")
	fs.StringVar(&opts.watchFilter, "watch-filter", "",
		"Watch and manage only objects whose label "+clusterv1.WatchLabel+" has this value, so several managers split a fleet; default: all objects.")
	fs.BoolVar(&opts.allMachineTemplates, "all-machine-templates", false,
		"Use every Metal3MachineTemplate as a template source, not only those annotated "+preprovv1.EnabledAnnotation+`: "true".`)
	fs.BoolVar(&opts.poolPreallocations, "pool-preallocations", false,
		"Also record each host's addresses in its IPPools' spec.preAllocations (a backstop for the claims); entries are removed when the host is deleted.")
	fs.IntVar(&opts.hostConcurrency, "host-concurrency", 10, "How many hosts are reconciled at once.")
	fs.DurationVar(&opts.inspectionStall, "inspection-stall-timeout", baremetal.DefaultInspectionStallTimeout,
		"How long BMO may keep a host we unpaused registering or inspecting before the host gets a PreprovisioningInspectionStalled Warning.")
	fs.StringSliceVar(&opts.ramdiskEndpoints, baremetal.RamdiskEndpointsFlag, nil,
		"What the deploy ramdisk must reach without DHCP, comma-separated or repeated: Ironic's API as the ramdisk calls it "+
			"(ironic-image's IRONIC_EXTERNAL_CALLBACK_URL) and its image server (IRONIC_EXTERNAL_HTTP_URL), as URLs with an IP "+
			"address or bare IP addresses. A host whose network data has no address of an endpoint's family, or no route to it, "+
			"is kept paused with a "+baremetal.ReasonEndpointUnreachable+" Warning. A Metal3PreprovisioningTemplate's "+
			"spec.ramdiskEndpoints replaces it for its hosts. Default: no check.")
	fs.Float64Var(&opts.qps, "kube-api-qps", 20, "Maximum queries per second to the API server.")
	fs.IntVar(&opts.burst, "kube-api-burst", 30, "Maximum burst of queries to the API server.")

	fs.StringVar(&opts.metricsBindAddress, metricsBindAddressFlag, "", "The address of plain HTTP metrics without authentication.")
	_ = fs.MarkDeprecated(metricsBindAddressFlag,
		"use --diagnostics-address (HTTPS with authentication and authorization), with --insecure-diagnostics for plain HTTP")
	fs.StringVar(&opts.healthAddr, healthProbeBindAddressFlag, ":9440", "The address the health and readiness probes bind to.")
	_ = fs.MarkDeprecated(healthProbeBindAddressFlag, "use --health-addr")
}

// resolveDeprecatedFlags gives --metrics-bind-address its old meaning, plain
// HTTP metrics without authentication on that address, so a deployment that
// still passes it keeps its scrapes working for one release.
func resolveDeprecatedFlags(fs *pflag.FlagSet, opts *options) error {
	if fs.Changed(healthProbeBindAddressFlag) && fs.Changed("health-addr") {
		return errors.New("--health-probe-bind-address is the deprecated name of --health-addr: set only --health-addr")
	}
	if !fs.Changed(metricsBindAddressFlag) {
		return nil
	}
	if fs.Changed("diagnostics-address") || fs.Changed("insecure-diagnostics") {
		return fmt.Errorf("--%s is deprecated: set only --diagnostics-address and --insecure-diagnostics", metricsBindAddressFlag)
	}
	ctrl.Log.Info("Serving metrics over plain HTTP without authentication, as the deprecated --"+metricsBindAddressFlag+
		" did; set --diagnostics-address (HTTPS, authenticated) instead", "address", opts.metricsBindAddress)
	opts.diagnostics.DiagnosticsAddress = opts.metricsBindAddress
	opts.diagnostics.InsecureDiagnostics = true
	return nil
}

// parseRamdiskEndpoints reads --ramdisk-endpoints as templates'
// spec.ramdiskEndpoints are read.
func parseRamdiskEndpoints(opts options) ([]networkdata.Endpoint, error) {
	endpoints, err := networkdata.ParseEndpoints(opts.ramdiskEndpoints)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", baremetal.RamdiskEndpointsFlag, err)
	}
	return endpoints, nil
}

func run(opts options, ramdiskEndpoints []networkdata.Endpoint) error {
	ctx := ctrl.SetupSignalHandler()
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	restConfig.QPS = float32(opts.qps)
	restConfig.Burst = opts.burst

	managerOpts, err := managerOptions(opts)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restConfig, managerOpts)
	if err != nil {
		return err
	}
	if err := controllers.Setup(ctx, mgr, controllers.Options{
		AllMachineTemplates: opts.allMachineTemplates,
		PoolPreallocations:  opts.poolPreallocations,
		Host:                controller.Options{MaxConcurrentReconciles: opts.hostConcurrency},

		InspectionStallTimeout: opts.inspectionStall,
		RamdiskEndpoints:       ramdiskEndpoints,
	}); err != nil {
		return err
	}
	if opts.webhookPort != 0 {
		if err := webhooks.SetupWebhooksWithManager(ctx, mgr); err != nil {
			return err
		}
	}
	if err := addHealthChecks(mgr, opts.webhookPort != 0); err != nil {
		return err
	}
	ctrl.Log.Info("Starting manager")
	return mgr.Start(ctx)
}

// addHealthChecks adds the liveness and readiness checks. With a webhook
// server, both wait until it serves TLS, as Cluster API's managers do
// (setupChecks in CAPI's main.go): a Pod reported ready before its
// webhook serves gets API requests the API server cannot send anywhere,
// and the template webhook fails closed.
func addHealthChecks(mgr ctrl.Manager, webhookServing bool) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if !webhookServing {
		return nil
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	return mgr.AddHealthzCheck("webhook", mgr.GetWebhookServer().StartedChecker())
}

// managerOptions are the manager's options: scheme, endpoints (diagnostics
// over HTTPS with authentication and authorization unless
// --insecure-diagnostics), leader election and a cache that holds only what
// the controllers read.
func managerOptions(opts options) (ctrl.Options, error) {
	tlsOptions, metricsOptions, err := capiflags.GetManagerOptions(opts.diagnostics)
	if err != nil {
		return ctrl.Options{}, err
	}
	managerOpts := ctrl.Options{
		Scheme:                        scheme.New(),
		Metrics:                       *metricsOptions,
		HealthProbeBindAddress:        opts.healthAddr,
		PprofBindAddress:              opts.profilerAddress,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              opts.leaderElectionID,
		LeaderElectionNamespace:       leaderElectionNamespace(opts),
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(opts.namespace, opts.watchFilter),
	}
	if opts.webhookPort != 0 {
		managerOpts.WebhookServer = webhook.NewServer(webhook.Options{
			Port: opts.webhookPort, CertDir: opts.webhookCertDir, TLSOpts: tlsOptions,
		})
	}
	return managerOpts, nil
}

func leaderElectionNamespace(opts options) string {
	if opts.leaderElectionNS != "" {
		return opts.leaderElectionNS
	}
	return opts.namespace
}
