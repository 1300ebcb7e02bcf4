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
	"errors"
	"fmt"
	"os"
	"sync"
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

// One control plane serves the tests that need the API server: the real
// kube-apiserver with our CRDs and the webhook configurations of
// config/webhook, pointed by envtest at a manager that runs only our
// webhooks. It starts with the first of them (apiClient), so the tests that
// call the webhooks' rules directly run without bin/k8s, and `go test -short`
// runs only those.
var (
	k8sClient      client.Client
	restConfig     *rest.Config
	webhookStarted healthz.Checker
	// managerReads counts the reads the webhooks' manager sends to the API
	// server past its watches.
	managerReads = &apiReads{}

	// startSuite starts the control plane and the webhooks, once;
	// stopSuite stops them.
	startSuite = sync.OnceValue(startControlPlaneAndWebhooks)
	stopSuite  func() error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if stopSuite != nil {
		if err := stopSuite(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// apiClient starts the suite's control plane on first use and returns its
// client once the webhook server accepts connections, so no test races the
// manager's start.
func apiClient(t *testing.T) client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the test control plane; -short runs only the tests that call the webhooks directly")
	}
	require.NoError(t, startSuite())
	require.Eventually(t, func() bool { return webhookStarted(nil) == nil }, 30*time.Second, 20*time.Millisecond,
		"the webhook server did not start")
	return k8sClient
}

func startControlPlaneAndWebhooks() error {
	env, err := framework.StartControlPlane(framework.StartControlPlaneInput{Webhooks: true})
	if err != nil {
		return err
	}
	hooks := env.Webhook
	config := rest.CopyConfig(env.Config)
	config.Wrap(managerReads.wrap)
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: hooks.LocalServingHost, Port: hooks.LocalServingPort, CertDir: hooks.LocalServingCertDir,
		}),
	})
	if err == nil {
		err = SetupWebhooksWithManager(context.Background(), mgr)
	}
	if err != nil {
		return errors.Join(err, env.Stop())
	}
	k8sClient, restConfig = env.Client, env.Config
	webhookStarted = mgr.GetWebhookServer().StartedChecker()

	ctx, cancel := context.WithCancel(context.Background())
	managerDone := make(chan error, 1)
	go func() { managerDone <- mgr.Start(ctx) }()
	stopSuite = func() error {
		cancel()
		managerErr := <-managerDone
		if managerErr != nil {
			managerErr = fmt.Errorf("manager: %w", managerErr)
		}
		return errors.Join(managerErr, env.Stop())
	}
	return nil
}
