package webhooks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/capm3-preprov/capm3-preprov/internal/scheme"
)

// One control plane serves every test: the real kube-apiserver with our CRDs
// and the webhook configurations of config/webhook, pointed by envtest at a
// manager that runs only our webhooks.
var (
	k8sClient      client.Client
	webhookStarted healthz.Checker
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	root := repoRoot()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		os.Setenv("KUBEBUILDER_ASSETS", filepath.Join(root, "bin", "k8s")) //nolint:errcheck // envtest reads it
	}
	s := scheme.New()
	env := &envtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "config", "crd", "bases"),
			filepath.Join(root, "config", "crd", "upstream"),
		},
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook")},
		},
	}
	config, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the test control plane:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	hooks := env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:  s,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: hooks.LocalServingHost, Port: hooks.LocalServingPort, CertDir: hooks.LocalServingCertDir,
		}),
	})
	if err == nil {
		err = SetupWebhooksWithManager(mgr)
	}
	if err == nil {
		k8sClient, err = client.New(config, client.Options{Scheme: s})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	webhookStarted = mgr.GetWebhookServer().StartedChecker()

	ctx, cancel := context.WithCancel(context.Background())
	managerDone := make(chan error, 1)
	go func() { managerDone <- mgr.Start(ctx) }()

	code := m.Run()
	cancel()
	if err := <-managerDone; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

// apiClient returns the client once the webhook server accepts connections,
// so no test races the manager's start.
func apiClient(t *testing.T) client.Client {
	t.Helper()
	require.Eventually(t, func() bool { return webhookStarted(nil) == nil }, 30*time.Second, 20*time.Millisecond,
		"the webhook server did not start")
	return k8sClient
}

// repoRoot is the repository's top folder.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
