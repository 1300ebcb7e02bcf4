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

// Package image tests the manager as it ships, built as make image builds
// it: the image's layers and configuration read from the archive; podman
// loading it and running the manager from it against a test control plane,
// with the RBAC of config/rbac and metrics served over HTTPS to authorized
// tokens only; and the binary's flags that only a process can show, such as
// --watch-filter's shards.
package image

import (
	"archive/tar"
	"context"
	"crypto/tls"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// testImage is the name the test gives the image: not the release's, so a
// loaded release image is never replaced (.test is a reserved domain).
const testImage = "capm3-preprov.test/capm3-preprov:image-test"

// managerBinary and archive are the static manager and the image archive
// TestMain builds as make image does.
var managerBinary, archive string

// The control plane the tests share, started by the first that needs it;
// each test uses namespaces of its own.
var (
	sharedControlPlane         *framework.ControlPlane
	errStartSharedControlPlane error
	startControlPlaneOnce      sync.Once
)

func controlPlane(t *testing.T) *framework.ControlPlane {
	t.Helper()
	startControlPlaneOnce.Do(func() {
		sharedControlPlane, errStartSharedControlPlane = framework.StartControlPlane(framework.StartControlPlaneInput{})
	})
	require.NoError(t, errStartSharedControlPlane)
	return sharedControlPlane
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "capm3-preprov-image-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctrllog.SetLogger(logr.Discard())
	managerBinary, archive = filepath.Join(dir, "manager"), filepath.Join(dir, "image.tar")
	err = buildImage(context.Background(), managerBinary, archive)
	code := 1
	if err == nil {
		code = m.Run()
	} else {
		fmt.Fprintln(os.Stderr, err)
	}
	if sharedControlPlane != nil {
		if err := sharedControlPlane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
			code = 1
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// buildImage runs make image's two steps: the static manager, then
// hack/image.
func buildImage(ctx context.Context, binary, archive string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	image := exec.CommandContext(ctx, "go", "run", "./hack/image", "-binary", binary, "-image", testImage, "-out", archive, "-revision", "test")
	for _, cmd := range []*exec.Cmd{build, image} {
		cmd.Dir = framework.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out)
		}
	}
	return nil
}

// TestArchive reads the archive as an engine would: one image tagged
// testImage whose entrypoint is /manager, run as distroless's non-root user,
// over one layer holding only /manager (a static binary that runs) and /tmp.
func TestArchive(t *testing.T) {
	ctx := context.Background()
	tag, err := name.NewTag(testImage)
	require.NoError(t, err)
	img, err := tarball.ImageFromPath(archive, &tag)
	require.NoError(t, err, "the archive has no image tagged %s", testImage)

	config, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, []string{"/manager"}, config.Config.Entrypoint)
	assert.Empty(t, config.Config.Cmd)
	assert.Equal(t, "65532:65532", config.Config.User)
	assert.Equal(t, "linux", config.OS)
	assert.Equal(t, runtime.GOARCH, config.Architecture)
	assert.Equal(t, "image-test", config.Config.Labels["org.opencontainers.image.version"])
	assert.Equal(t, "test", config.Config.Labels["org.opencontainers.image.revision"])
	assert.Equal(t, "Apache-2.0", config.Config.Labels["org.opencontainers.image.licenses"])

	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	content, err := layers[0].Uncompressed()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, content.Close()) })
	manager := filepath.Join(t.TempDir(), "manager")
	files := map[string]*tar.Header{}
	layer := tar.NewReader(content)
	for {
		header, nextErr := layer.Next()
		if nextErr == io.EOF {
			break
		}
		require.NoError(t, nextErr)
		files[header.Name] = header
		if header.Name == "manager" {
			out, openErr := os.OpenFile(manager, os.O_CREATE|os.O_WRONLY, 0o755)
			require.NoError(t, openErr)
			_, err = io.Copy(out, layer)
			require.NoError(t, errors.Join(err, out.Close()))
		}
	}
	require.Len(t, files, 2, "the layer holds only /manager and /tmp: %v", files)
	assert.Equal(t, byte(tar.TypeReg), files["manager"].Typeflag)
	assert.Equal(t, int64(0o755), files["manager"].Mode)
	assert.Zero(t, files["manager"].Uid, "/manager is root's, only executable by the user")
	require.Contains(t, files, "tmp/")
	assert.Equal(t, byte(tar.TypeDir), files["tmp/"].Typeflag)
	assert.Equal(t, int64(0o1777), files["tmp/"].Mode)

	// No base image brings a dynamic loader or a libc: the binary must
	// be static.
	binary, err := elf.Open(manager)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, binary.Close()) })
	for _, program := range binary.Progs {
		assert.NotEqual(t, elf.PT_INTERP, program.Type, "/manager needs a dynamic loader; build it with CGO_ENABLED=0")
	}

	out, err := exec.CommandContext(ctx, manager, "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--diagnostics-address")
}

// podman runs a podman command and returns its standard output.
func podman(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "podman", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "podman %s: %s", strings.Join(args, " "), stderr.String())
	return string(out)
}

// runArgs are the podman run options this machine needs: runc, because
// crun cannot create a container under a hybrid cgroup v1/v2 layout
// ("cgroups in hybrid mode not supported"); and open-files and process
// limits below the current hard limits, since podman's defaults raise them
// and raising needs CAP_SYS_RESOURCE ("setrlimit RLIMIT_NOFILE: Operation
// not permitted"). Neither changes what runs in the container.
var runArgs = []string{"--runtime", "runc", "run", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"}

// TestPodman loads the archive into podman and runs the manager from it:
// --help, then against a test control plane as the ServiceAccount of
// config/rbac, where it sets up a host and serves its metrics over HTTPS
// to authorized tokens only.
func TestPodman(t *testing.T) {
	// Not t.Context(): the clean-ups run podman after it is cancelled.
	ctx := context.Background()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("podman is not installed: hack/install-packages.sh installs it")
	}
	assert.Contains(t, podman(t, "load", "--input", archive), testImage)
	t.Cleanup(func() { _ = exec.CommandContext(ctx, "podman", "rmi", "--force", testImage).Run() })

	// The manager prints its usage on standard error.
	help, err := exec.CommandContext(ctx, "podman", append(append([]string{}, runArgs...), "--rm", testImage, "--help")...).CombinedOutput()
	require.NoError(t, err, "%s", help)
	assert.Contains(t, string(help), "--watch-filter")

	cp := controlPlane(t)
	c := cp.Client

	// The RBAC a user installs, for the ServiceAccount manager of namespace
	// system, as in config/rbac before config/default renames them.
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "system"}}))
	rbac := filepath.Join(t.TempDir(), "rbac.yaml")
	_, err = framework.KustomizeBuild(ctx, "rbac", rbac)
	require.NoError(t, err)
	_, err = framework.ApplyFiles(ctx, c, rbac)
	require.NoError(t, err)
	kubeconfig := managerKubeconfig(t, cp)

	ports, err := framework.FreePorts(2)
	require.NoError(t, err)
	healthPort, diagnosticsPort := ports[0], ports[1]
	container := "capm3-preprov-image-test"
	podman(t, append(append([]string{}, runArgs...), "--detach", "--name", container, "--network", "host",
		"--volume", kubeconfig+":/etc/capm3-preprov/kubeconfig:ro", testImage,
		"--kubeconfig=/etc/capm3-preprov/kubeconfig", "--webhook-port=0", "--leader-elect", "--leader-election-namespace=system",
		fmt.Sprintf("--health-addr=127.0.0.1:%d", healthPort), fmt.Sprintf("--diagnostics-address=127.0.0.1:%d", diagnosticsPort))...)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.CommandContext(ctx, "podman", "logs", container).CombinedOutput()
			t.Logf("manager log:\n%s", logs)
		}
		_ = exec.CommandContext(ctx, "podman", "rm", "--force", container).Run()
	})
	user := strings.TrimSpace(podman(t, "inspect", "--format", "{{.Config.User}}", container))
	assert.Equal(t, "65532:65532", user)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		request, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), http.NoBody)
		require.NoError(c, err)
		response, err := http.DefaultClient.Do(request)
		require.NoError(c, err)
		assert.NoError(c, response.Body.Close())
		assert.Equal(c, http.StatusOK, response.StatusCode)
	}, time.Minute, time.Second, "the manager in the container never became ready")

	t.Run("sets up a host", func(t *testing.T) {
		namespace := "image-test"
		racked := map[string]string{"rack": "r1"}
		host := fixtures.Host(namespace, "node-0", "52:54:00:aa:bb:01", racked)
		for _, obj := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
			fixtures.BMCCredentials(host),
			fixtures.PreprovisioningTemplate(namespace, "rack-1", racked, fixtures.StaticNetworkData()),
			host,
		} {
			require.NoError(t, c.Create(ctx, obj))
		}
		require.EventuallyWithT(t, func(collect *assert.CollectT) {
			require.NoError(collect, c.Get(ctx, client.ObjectKeyFromObject(host), host))
			assert.Equal(collect, "node-0-preprov-networkdata", host.Spec.PreprovisioningNetworkDataName)
			assert.NotContains(collect, host.Annotations, preprovv1.PausedAnnotation)
		}, time.Minute, time.Second, "the manager in the container did not set up the host")
	})

	t.Run("serves metrics over HTTPS to authorized tokens only", func(t *testing.T) {
		metrics := fmt.Sprintf("https://127.0.0.1:%d/metrics", diagnosticsPort)
		clientset, err := kubernetes.NewForConfig(cp.Config)
		require.NoError(t, err)
		scraper := serviceAccountToken(t, clientset, "system", "prometheus")
		require.NoError(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "system", Name: "prometheus"}},
		}))
		stranger := serviceAccountToken(t, clientset, "system", "stranger")

		assert.Equal(t, http.StatusUnauthorized, scrape(t, metrics, "").status, "without a token")
		assert.Equal(t, http.StatusForbidden, scrape(t, metrics, stranger).status, "with a token not bound to metrics-reader")
		require.EventuallyWithT(t, func(collect *assert.CollectT) {
			result := scrape(t, metrics, scraper)
			assert.Equal(collect, http.StatusOK, result.status)
			assert.Contains(collect, result.body, "capm3_preprov_")
		}, 30*time.Second, time.Second, "with a token bound to metrics-reader (RBAC may take a moment)")
	})
}

// managerKubeconfig is a kubeconfig for the ServiceAccount manager of
// namespace system, readable by the container's user.
func managerKubeconfig(t *testing.T, cp *framework.ControlPlane) string {
	t.Helper()
	path, err := cp.ServiceAccountKubeconfig("system", "manager")
	require.NoError(t, err)
	content, err := os.ReadFile(path)
	require.NoError(t, err)
	readable := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(readable, content, 0o644))
	return readable
}

// serviceAccountToken creates a ServiceAccount and returns a token for it.
func serviceAccountToken(t *testing.T, clientset *kubernetes.Clientset, namespace, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := clientset.CoreV1().ServiceAccounts(namespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	token, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return token.Status.Token
}

type scrapeResult struct {
	status int
	body   string
}

// scrape GETs url with a bearer token ("" for none). The manager's
// certificate is self-signed.
func scrape(t *testing.T, url, token string) scrapeResult {
	t.Helper()
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	request, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, http.NoBody)
	require.NoError(t, err)
	if token != "" {
		request.Header.Set("Authorization", "Bearer "+token)
	}
	response, err := insecure.Do(request)
	require.NoError(t, err)
	body, err := io.ReadAll(response.Body)
	require.NoError(t, errors.Join(err, response.Body.Close()))
	return scrapeResult{status: response.StatusCode, body: string(body)}
}
