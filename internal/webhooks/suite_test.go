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

package webhooks

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// One control plane serves every test: the real kube-apiserver with our CRDs
// and the webhook configurations of config/webhook, pointed by envtest at a
// manager that runs only our webhooks.
var (
	k8sClient      client.Client
	restConfig     *rest.Config
	webhookStarted healthz.Checker
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	env, err := framework.StartControlPlane(framework.StartControlPlaneInput{Webhooks: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	hooks := env.Webhook
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: hooks.LocalServingHost, Port: hooks.LocalServingPort, CertDir: hooks.LocalServingCertDir,
		}),
	})
	if err == nil {
		err = SetupWebhooksWithManager(mgr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k8sClient, restConfig = env.Client, env.Config
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
