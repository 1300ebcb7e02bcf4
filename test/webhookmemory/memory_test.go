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

// Package webhookmemory measures the manager's memory while its template
// webhook answers server-side dry runs, with thousands of inspected hosts
// (status.hardware with NICs, disks and CPU flags) in the namespace the
// template selects from. The manager is bin/manager's code built afresh and
// run as its own process, webhook server on; the numbers come from its
// /proc status (VmRSS, and VmHWM reset before the dry runs) and its
// go_memstats_heap_alloc_bytes metric, sampled every 50 ms. It runs by hand
// only, as the benchmark does (WEBHOOK_MEMORY_HOSTS is the host count;
// WEBHOOK_MEMORY_MANAGER, when set, is a manager binary to measure instead,
// such as one built at an earlier commit):
//
//	WEBHOOK_MEMORY_HOSTS=5000 go test ./test/webhookmemory/ -v -count=1 -timeout 30m
package webhookmemory

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

const (
	// dryRuns is how many server-side dry runs are measured, dryRunsAtOnce
	// of them at a time (a CI job applying a folder of templates).
	dryRuns       = 200
	dryRunsAtOnce = 4
	sampleEvery   = 50 * time.Millisecond
)

func TestWebhookMemoryDuringDryRuns(t *testing.T) {
	hosts, err := strconv.Atoi(os.Getenv("WEBHOOK_MEMORY_HOSTS"))
	if err != nil {
		t.Skip("a measurement run by hand: set WEBHOOK_MEMORY_HOSTS to the number of hosts")
	}
	ctx := context.Background()
	dir := t.TempDir()
	binary := buildManager(t, dir)
	cp, err := framework.StartControlPlane(framework.StartControlPlaneInput{Webhooks: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cp.Stop()) })

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "webhook-memory-"}}
	require.NoError(t, cp.Client.Create(ctx, ns))
	require.NoError(t, cp.Client.Create(ctx, &capm3.Metal3DataTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "pooled"},
		Spec:       capm3.Metal3DataTemplateSpec{ClusterName: "preprov"},
	}))
	start := time.Now()
	createInspectedHosts(t, cp.Client, ns.Name, hosts)
	t.Logf("%d inspected hosts created in %s", hosts, time.Since(start).Round(time.Second))

	manager := startManager(t, binary, dir, cp)
	template := &preprovv1.Metal3PreprovisioningTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "rack-r1"},
		Spec: preprovv1.Metal3PreprovisioningTemplateSpec{
			HostSelector:    capm3.HostSelector{MatchLabels: map[string]string{"rack": "r1"}},
			DataTemplateRef: &corev1.LocalObjectReference{Name: "pooled"},
		},
	}
	dryRun := func() error { return cp.Client.Create(ctx, template.DeepCopy(), client.DryRunAll) }
	// The manager settles (its controllers handle the initial list), then the
	// first request may start the cache's watches.
	settle(t, manager)
	require.NoError(t, dryRun())

	before, heapBefore, allocatedBefore := procStatus(t, manager.PID()), heapAlloc(manager), allocated(manager)
	resetPeakRSS(t, manager.PID())
	sampler := startSampling(manager)
	start = time.Now()
	failed := runDryRuns(t, dryRun)
	elapsed := time.Since(start)
	peakHeap := sampler.stop()
	after := procStatus(t, manager.PID())
	perDryRun := (allocated(manager) - allocatedBefore) / dryRuns
	t.Logf("manager, %d hosts, %d dry runs (%d at a time, %d failed) in %s (%s each): RSS before %s, peak during %s (VmHWM), "+
		"after %s; heap before %s, peak during %s; allocated per dry run (with the metrics scrapes) %s",
		hosts, dryRuns, dryRunsAtOnce, failed, elapsed.Round(time.Millisecond), (elapsed / dryRuns).Round(time.Millisecond),
		mib(before["VmRSS"]), mib(after["VmHWM"]), mib(after["VmRSS"]), mib(heapBefore), mib(peakHeap), mib(perDryRun))
}

// buildManager builds the manager from the working tree, unless
// WEBHOOK_MEMORY_MANAGER names one.
func buildManager(t *testing.T, dir string) string {
	t.Helper()
	if binary := os.Getenv("WEBHOOK_MEMORY_MANAGER"); binary != "" {
		return binary
	}
	binary := filepath.Join(dir, "manager")
	build := exec.Command("go", "build", "-o", binary, ".") //nolint:noctx // a build, bounded by the test's timeout
	build.Dir = framework.RepoRoot()
	output, err := build.CombinedOutput()
	require.NoError(t, err, "%s", output)
	return binary
}

func startManager(t *testing.T, binary, dir string, cp *framework.ControlPlane) *framework.ManagerProcess {
	t.Helper()
	kubeConfig := filepath.Join(dir, "manager.kubeconfig")
	require.NoError(t, os.WriteFile(kubeConfig, cp.KubeConfig, 0o600))
	manager := &framework.ManagerProcess{
		Name: "manager", Binary: binary, LogPath: filepath.Join(dir, "manager.log"),
		Args: []string{
			"--kubeconfig", kubeConfig,
			"--webhook-port=" + strconv.Itoa(cp.Webhook.LocalServingPort),
			"--webhook-cert-dir=" + cp.Webhook.LocalServingCertDir,
		},
	}
	require.NoError(t, manager.Start())
	t.Cleanup(func() { require.NoError(t, manager.Stop()) })
	return manager
}

// createInspectedHosts creates hosts labelled rack r1, each with the status
// an inspection gives.
func createInspectedHosts(t *testing.T, c client.Client, namespace string, n int) {
	t.Helper()
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := createInspectedHost(c, namespace, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func createInspectedHost(c client.Client, namespace string, i int) error {
	ctx := context.Background()
	host := &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: fmt.Sprintf("rack-r1-node-%05d", i),
			Labels: map[string]string{"rack": "r1"},
		},
		Spec: bmov1alpha1.BareMetalHostSpec{
			Online:         true,
			BootMACAddress: fmt.Sprintf("b4:96:91:00:%02x:%02x", (i>>8)&0xff, i&0xff),
			BMC:            bmov1alpha1.BMCDetails{Address: fmt.Sprintf("redfish-virtualmedia://10.1.%d.%d/redfish/v1/Systems/1", i/250, i%250+1)},
		},
	}
	if err := c.Create(ctx, host); err != nil {
		return err
	}
	host.Status = inspectedStatus(i, host.Spec.BootMACAddress)
	return c.Status().Update(ctx, host)
}

// inspectedStatus is what Ironic reports for a current x86 server: six
// NICs with LLDP, four NVMe disks, CPU flags, firmware.
func inspectedStatus(i int, bootMAC string) bmov1alpha1.BareMetalHostStatus {
	nics := make([]bmov1alpha1.NIC, 0, 6)
	for n := range 6 {
		nics = append(nics, bmov1alpha1.NIC{
			Name: fmt.Sprintf("eno%d", n+1), MAC: fmt.Sprintf("b4:96:91:%02x:%02x:%02x", n+1, (i>>8)&0xff, i&0xff),
			Model:     "0x8086 0x1593 Intel Corporation Ethernet Controller E810-C for SFP",
			IP:        fmt.Sprintf("fe80::b696:91ff:fe%02x:%02x%02x%%eno%d", n, (i>>8)&0xff, i&0xff, n+1),
			SpeedGbps: 25, PCIAddress: fmt.Sprintf("0000:%02x:00.%d", 0x17+n/2, n%2), PXE: n == 0,
			LLDP: &bmov1alpha1.LLDP{SwitchID: fmt.Sprintf("c4:7e:e0:%02x:00:01", n), PortID: fmt.Sprintf("Ethernet%d/%d", i%48+1, n+1)},
		})
	}
	nics[0].MAC = bootMAC
	storage := make([]bmov1alpha1.Storage, 0, 4)
	for d := range 4 {
		storage = append(storage, bmov1alpha1.Storage{
			Name: fmt.Sprintf("/dev/nvme%dn1", d), Type: bmov1alpha1.NVME, SizeBytes: 3840755982336,
			Vendor: "Samsung", Model: "SAMSUNG MZQL23T8HCLS-00A07", SerialNumber: fmt.Sprintf("S64HNE0T%06d%d", i, d),
		})
	}
	return bmov1alpha1.BareMetalHostStatus{
		OperationalStatus: bmov1alpha1.OperationalStatusOK,
		Provisioning:      bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateAvailable},
		HardwareDetails: &bmov1alpha1.HardwareDetails{
			CPU: bmov1alpha1.CPU{Arch: "x86_64", Model: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", Count: 128, Flags: cpuFlags},
			NIC: nics, Storage: storage, RAMMebibytes: 524288,
			Firmware: bmov1alpha1.Firmware{BIOS: bmov1alpha1.BIOS{Date: "03/12/2025", Vendor: "Dell Inc.", Version: "1.16.2"}},
		},
	}
}

var cpuFlags = strings.Fields(`3dnowprefetch abm adx aes apic arat arch_capabilities avx avx2 avx512bw avx512cd
avx512dq avx512f avx512vl avx512_vnni bmi1 bmi2 clflush clflushopt clwb cmov constant_tsc cpuid cx16 cx8 de
ept erms f16c flexpriority fma fpu fsgsbase fxsr hle ht hypervisor ibpb ibrs invpcid lahf_lm lm mca mce md_clear
mmx movbe mpx msr mtrr nopl nx ospke pae pat pcid pclmulqdq pdpe1gb pge pku pni popcnt pse pse36 rdrand rdseed`)

// settle waits until the manager's heap stops growing: its controllers
// have handled the initial list of hosts.
func settle(t *testing.T, manager *framework.ManagerProcess) {
	t.Helper()
	previous := -1.0
	require.Eventually(t, func() bool {
		current := heapAlloc(manager)
		stable := previous > 0 && current < previous*1.05
		previous = current
		return stable
	}, 5*time.Minute, 5*time.Second)
}

// runDryRuns runs the dry runs and returns how many failed (the API
// server gives a webhook 10 s); the first failure is logged.
func runDryRuns(t *testing.T, dryRun func() error) int {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, dryRuns)
	for range dryRunsAtOnce {
		wg.Go(func() {
			for range dryRuns / dryRunsAtOnce {
				errs <- dryRun()
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil && failed == 0 {
			t.Logf("a dry run failed: %v", err)
		}
		if err != nil {
			failed++
		}
	}
	return failed
}

// sampler records the largest heap the manager's metrics report.
type sampler struct {
	done chan struct{}
	peak chan float64
}

func startSampling(manager *framework.ManagerProcess) *sampler {
	s := &sampler{done: make(chan struct{}), peak: make(chan float64, 1)}
	go func() {
		peak := 0.0
		ticker := time.NewTicker(sampleEvery)
		defer ticker.Stop()
		for {
			peak = max(peak, heapAlloc(manager))
			select {
			case <-s.done:
				s.peak <- peak
				return
			case <-ticker.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() float64 {
	close(s.done)
	return <-s.peak
}

func heapAlloc(manager *framework.ManagerProcess) float64 {
	metrics, err := manager.Metrics(context.Background())
	if err != nil {
		return 0
	}
	return metrics.Sum("go_memstats_heap_alloc_bytes")
}

// allocated is the bytes the manager has allocated since it started.
func allocated(manager *framework.ManagerProcess) float64 {
	metrics, err := manager.Metrics(context.Background())
	if err != nil {
		return 0
	}
	return metrics.Sum("go_memstats_alloc_bytes_total")
}

// procStatus reads the "kB" lines of /proc/<pid>/status, in bytes.
func procStatus(t *testing.T, pid int) map[string]float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	values := map[string]float64{}
	for line := range strings.Lines(string(data)) {
		key, rest, _ := strings.Cut(line, ":")
		fields := strings.Fields(rest)
		if len(fields) == 2 && fields[1] == "kB" {
			kib, err := strconv.ParseFloat(fields[0], 64)
			require.NoError(t, err)
			values[key] = kib * 1024
		}
	}
	return values
}

// resetPeakRSS starts VmHWM afresh from the current RSS (proc(5), clear_refs).
func resetPeakRSS(t *testing.T, pid int) {
	t.Helper()
	require.NoError(t, os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o600))
}

func mib(bytes float64) string { return fmt.Sprintf("%.1f MiB", bytes/(1<<20)) }
