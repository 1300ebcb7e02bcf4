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

// Package docs_test runs the commands README.md and docs/*.md show, so the
// documentation stays true: kubectl commands (kubectl preprov included)
// against the control plane make run sets up, clusterctl generate against a
// local clusterctl repository, clusterctl init from it (with stand-ins for
// the providers it takes from the internet) on bare control planes, and dry
// checks of the make, go and clusterctl move commands and the hack/
// scripts. See docs/development.md.
package docs_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
	standins "github.com/capm3-preprov/capm3-preprov/test/standins/clusterctl"
)

// placeholders are what the documents' placeholders stand for here: hosts,
// pools and files of examples/, which make run applies.
var placeholders = strings.NewReplacer(
	"<host>", "worker-0",
	"<ns>", "metal3",
	"<file>", "examples/machine-template-ipam",
	"<pool>", "provisioning",
	"<ip>", "192.168.111.100",
	"<name>", "edge",
	"<flavor>", "dhcpless",
	// development.md's commands run from a CAPM3 checkout beside ours.
	"../capm3-preprov/", "./",
)

// notRunHere are the commands that cannot run here, and why. Keep it short.
var notRunHere = map[string]string{
	"kubectl apply -f edge.yaml": "needs Cluster API's kubeadm CRDs, which make run does not install; " +
		"test/clusterctl's TestGeneratedClusters creates what generate cluster gives",
	"kubectl -n capm3-preprov-system scale deployment capm3-preprov-controller-manager --replicas=0": "make run runs " +
		"the manager as a process, not the Deployment of clusterctl init",
	"kind load image-archive out/capm3-preprov-image.tar": "kind is not installed here; test/image loads the archive with podman",
	"make kind-cluster":                "a target of Cluster API's Makefile, run in its checkout",
	"make tilt-up":                     "a target of Cluster API's Makefile, run in its checkout",
	"hack/tools/internal/tilt-prepare": "a folder of Cluster API's repository",
}

// shows is what a command's output must contain (or must not) where a
// document says what the command shows.
var shows = map[string]struct{ contains, lacks []string }{
	`kubectl get bmh -n metal3 -o custom-columns='NAME:.metadata.name,PAUSED:.metadata.annotations.baremetalhost\.metal3\.io/paused,NETWORK DATA:.spec.preprovisioningNetworkDataName'`: {
		contains: []string{"<none>", "worker-0-preprov-networkdata"}, lacks: []string{"metal3.io/preprovisioning"},
	},
	"kubectl get secret worker-0-preprov-networkdata -n metal3 -o jsonpath='{.data.networkData}' | base64 -d": {
		contains: []string{`"networks"`, `"links"`},
	},
	"kubectl get ipaddresses.ipam.metal3.io -n metal3 -o custom-columns=NAME:.metadata.name,ADDRESS:.spec.address,CLAIM:.spec.claim.name": {
		contains: []string{"worker-0-provisioning", "192.168.111."},
	},
	"kubectl get m3ppt -n metal3":                {contains: []string{"True"}},
	"kubectl preprov explain worker-0 -n metal3": {contains: []string{"SetUp"}},
	"kubectl preprov render worker-0 -n metal3":  {contains: []string{"192.168.111."}},
	"kubectl preprov render worker-0 -f examples/machine-template-ipam --address provisioning=192.168.111.100 -o networkdata": {
		contains: []string{"192.168.111.100"},
	},
}

// shims run the make and go commands dry (-n) and check a clusterctl command
// other than generate by its flags: --help still parses every flag.
const shims = `make() { command make -n "$@"; }
go() { command go "$1" -n "${@:2}"; }
clusterctl() {
	if [ "$1" = generate ]; then command clusterctl "$@"; else command clusterctl "$@" --help >/dev/null; fi
}
`

// A clusterctl init command with flags runs (checkInit); prose names
// clusterctl init alone, which is flag-checked.
var initCommand = regexp.MustCompile(`^clusterctl init --`)

// envAssignment is a NAME=value before a command.
var envAssignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=\S*\s+`)

func TestDocCommands(t *testing.T) {
	root := framework.RepoRoot()
	documents, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	var commands []docCommand
	for _, document := range append([]string{filepath.Join(root, "README.md")}, documents...) {
		markdown, err := os.ReadFile(document)
		require.NoError(t, err)
		file, err := filepath.Rel(root, document)
		require.NoError(t, err)
		commands = append(commands, extractCommands(file, string(markdown))...)
	}
	shown := map[string]bool{}
	for _, command := range commands {
		shown[command.text] = true
	}
	for text := range shows {
		assert.True(t, shown[text], "shows names a command no document shows: %s", text)
	}
	for text := range notRunHere {
		assert.True(t, shown[text], "notRunHere names a command no document shows: %s", text)
	}

	if testing.Short() {
		t.Skip("-short: the commands need what make run sets up")
	}
	docs := startMakeRun(t, root)
	firstShown := map[string]docCommand{}
	for _, command := range commands {
		t.Run(fmt.Sprintf("%s:%d", command.file, command.line), func(t *testing.T) {
			if reason, ok := notRunHere[command.text]; ok {
				t.Skipf("%s: not run here: %s", command, reason)
			}
			// The same command shown twice runs once (a clusterctl init
			// takes a control plane of its own).
			if first, ok := firstShown[command.text]; ok {
				t.Skipf("%s: the same command as %s, run there", command, first)
			}
			firstShown[command.text] = command
			docs.check(t, command)
		})
	}
}

// docEnvironment is where the documents' commands run.
type docEnvironment struct {
	root string
	// kubectlEnv has kubectl, the plugin and clusterctl on the PATH, make
	// run's control plane in KUBECONFIG and clusterctl's configuration.
	kubectlEnv []string
	// clusterctlDir is where clusterctl commands run (and write edge.yaml).
	clusterctlDir string
}

func (d *docEnvironment) check(t *testing.T, command docCommand) {
	t.Helper()
	text := placeholders.Replace(command.text)
	words := text
	for envAssignment.MatchString(words) {
		words = envAssignment.ReplaceAllString(words, "")
	}
	word, _, _ := strings.Cut(words, " ")
	switch {
	case word == "kubectl":
		output := runBash(t, command, d.root, d.kubectlEnv, text)
		want := shows[command.text]
		for _, s := range want.contains {
			assert.Contains(t, output, s, "%s shows it", command)
		}
		for _, s := range want.lacks {
			assert.NotContains(t, output, s, "%s does not show it", command)
		}
	case initCommand.MatchString(words):
		d.checkInit(t, command, text)
	case word == "clusterctl":
		runBash(t, command, d.clusterctlDir, d.kubectlEnv, shims+text)
	case word == "make" || word == "go":
		runBash(t, command, d.root, withoutMakeFlags(os.Environ()), shims+text)
	case strings.HasPrefix(word, "hack/"):
		info, err := os.Stat(filepath.Join(d.root, word))
		require.NoError(t, err, "%s", command)
		if !info.IsDir() {
			assert.NotZero(t, info.Mode()&0o111, "%s: %s is not executable", command, word)
			runBash(t, command, d.root, os.Environ(), "bash -n "+word)
		}
	default:
		t.Fatalf("%s: no way to check a %q command: add one to test/docs", command, word)
	}
}

// runBash runs script with bash in dir and returns its output; the command
// must exit 0.
func runBash(t *testing.T, command docCommand, dir string, env []string, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", command, output)
	return string(output)
}

// withoutMakeFlags drops the variables a make that runs go test passes on,
// which would change what make -n does.
func withoutMakeFlags(env []string) []string {
	var kept []string
	for _, variable := range env {
		name, _, _ := strings.Cut(variable, "=")
		if name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" && name != "MAKEOVERRIDES" {
			kept = append(kept, variable)
		}
	}
	return kept
}

// startMakeRun sets up what make run does (a control plane with every CRD,
// the IPAM stand-in, the examples, the manager until the hosts settle),
// builds the manager and the plugin, and a local clusterctl repository of
// our release manifests.
func startMakeRun(t *testing.T, root string) *docEnvironment {
	t.Helper()
	// The harness logs nothing through controller-runtime but errors.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	require.NoError(t, framework.UseKubeBinaries())
	for _, tool := range []string{"clusterctl", "kustomize", "k8s/kubectl"} {
		_, err := os.Stat(filepath.Join(root, "bin", tool))
		require.NoError(t, err, "make test builds bin/%s", tool)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	for binary, pkg := range map[string]string{"manager": ".", "kubectl-preprov": "./cmd/kubectl-preprov"} {
		build := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(bin, binary), pkg)
		build.Dir = root
		output, err := build.CombinedOutput()
		require.NoError(t, err, "go build %s\n%s", pkg, output)
	}

	env, err := framework.StartControlPlane(framework.StartControlPlaneInput{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, env.KubeConfig, 0o600))
	standIn, err := framework.StartIPAMStandIn(env.Config)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, standIn.Stop()) })
	clusterAPIStandIn, err := framework.StartCAPIIPAMStandIn(env.Config)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, clusterAPIStandIn.Stop()) })
	ctx := context.Background()
	require.NoError(t, framework.ApplyExamples(ctx, env.Client, filepath.Join(root, "examples")))
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api")
	list.Dir = root
	capiDir, err := list.Output()
	require.NoError(t, err)
	recordInstalledProviders(ctx, t, env, strings.TrimSpace(string(capiDir)))
	manager := &framework.ManagerProcess{
		Name: "manager", Binary: filepath.Join(bin, "manager"), LogPath: filepath.Join(dir, "manager.log"),
		Args: []string{"--kubeconfig", kubeconfig, "--webhook-port=0"},
	}
	require.NoError(t, manager.Start())
	t.Cleanup(func() { assert.NoError(t, manager.Stop()) })
	require.NoError(t, framework.WaitForHostsSettled(ctx, env.Client, time.Minute))

	home := filepath.Join(dir, "home")
	return &docEnvironment{
		root: root,
		kubectlEnv: []string{
			"PATH=" + strings.Join([]string{bin, filepath.Join(root, "bin", "k8s"), filepath.Join(root, "bin"), os.Getenv("PATH")}, ":"),
			"HOME=" + home, "XDG_CONFIG_HOME=" + home, "KUBECONFIG=" + kubeconfig,
			"CLUSTERCTL_DISABLE_VERSIONCHECK=true",
		},
		clusterctlDir: clusterctlRepository(t, root, strings.TrimSpace(string(capiDir)), dir, home),
	}
}

// recordInstalledProviders installs clusterctl's inventory CRD and records
// in it the infrastructure providers docs/clusterctl.md installs, as
// clusterctl init would.
func recordInstalledProviders(ctx context.Context, t *testing.T, env *framework.ControlPlane, capiDir string) {
	t.Helper()
	inventoryCRD := filepath.Join(capiDir, "cmd", "clusterctl", "config", "manifest", "clusterctl-api.yaml")
	_, err := framework.ApplyFiles(ctx, env.Client, inventoryCRD)
	require.NoError(t, err)
	providers := &unstructured.UnstructuredList{}
	providers.SetGroupVersionKind(schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "ProviderList"})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, env.Client.List(ctx, providers))
	}, 30*time.Second, 200*time.Millisecond, "the inventory CRD is served")
	_, err = framework.ApplyFiles(ctx, env.Client, filepath.Join("testdata", "installed-providers.yaml"))
	require.NoError(t, err)
}

// clusterctlRepository builds a local clusterctl repository of our release
// manifests, as docs/clusterctl.md does, and of stand-ins for the providers
// clusterctl init takes from the internet, configures clusterctl in home to
// use it, and returns a folder for clusterctl to run in.
func clusterctlRepository(t *testing.T, root, capiDir, dir, home string) string {
	t.Helper()
	repository := filepath.Join(dir, "repository")
	version := filepath.Join(repository, "infrastructure-metal3-preprov", "v0.1.0")
	release := exec.CommandContext(t.Context(), filepath.Join(root, "hack", "release-manifests.sh"))
	release.Dir = root
	release.Env = append(os.Environ(), "KUSTOMIZE="+filepath.Join(root, "bin", "kustomize"), "OUT="+version, "TAG=v0.1.0")
	output, err := release.CombinedOutput()
	require.NoError(t, err, "hack/release-manifests.sh\n%s", output)
	standIns, err := standins.Build(t.Context(), root, filepath.Join(root, "bin", "kustomize"), capiDir, repository)
	require.NoError(t, err)
	config := standins.Config(append(standIns, standins.Provider{
		Name: "metal3-preprov", Type: "InfrastructureProvider",
		Components: filepath.Join(version, "infrastructure-components.yaml"),
	})...)
	require.NoError(t, os.MkdirAll(filepath.Join(home, "cluster-api"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, "cluster-api", "clusterctl.yaml"), []byte(config), 0o600))
	work := filepath.Join(dir, "work")
	require.NoError(t, os.Mkdir(work, 0o700))
	return work
}
