//go:build e2e

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

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/cloudinit"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
)

// cloudInitPerCall bounds the hosts whose network data a consumer check
// converts with cloud-init: net-convert is a Python process of about a
// second, and a story's hosts share their template (the fleet's 180 share
// two), so the first and the last host stand for the others. Ironic takes
// every host's document.
const cloudInitPerCall = 2

// Consumers are the readers of what the suite's hosts get, in local mode:
// Ironic's API, which BMO hands a Secret's network data to, and cloud-init,
// which reads it in the ramdisk and the OS. Each document is checked once
// per host: a call with a document already checked is free.
type Consumers struct {
	Ironic    *ironic.Server
	artifacts string

	mu sync.Mutex
	// submitted and converted hold host/document keys already checked.
	submitted, converted map[string]bool
	// timings of the checks, reported when the suite stops.
	submissions, conversions []time.Duration
}

// newConsumers clears cloud-init's output of an earlier run: its folders
// are named after namespaces, which differ from run to run.
func newConsumers(server *ironic.Server, artifacts string) (*Consumers, error) {
	consumers := &Consumers{
		Ironic:    server,
		artifacts: filepath.Join(artifacts, "cloud-init"),
		submitted: map[string]bool{},
		converted: map[string]bool{},
	}
	return consumers, os.RemoveAll(consumers.artifacts)
}

// expectConsumersAccept hands each host's Secret to Ironic as BMO does and
// expects it stored (2xx), expects broken variants of one of them refused
// with 400 Invalid network_data, and converts up to cloudInitPerCall of
// them with cloud-init and checks the result against the document.
//
// A consumer's verdict on a document is final, so it fails the spec at
// once (Ginkgo's Fail) instead of letting an Eventually around the caller
// retry it until its timeout.
func (c *Cluster) expectConsumersAccept(ctx context.Context, namespace string, hosts []string, state namespaceState) {
	if c.Local == nil {
		// On an existing cluster its own BMO hands the Secrets to its Ironic.
		return
	}
	GinkgoHelper()
	consumers := c.Local.Consumers
	var fresh []string
	documents := map[string][]byte{}
	for _, name := range hosts {
		secrets := itemsOwnedBy(state.secrets, state.hosts[name].UID)
		Expect(secrets).To(HaveLen(1), "host %s", name)
		document := secrets[0].Data[preprovv1.NetworkDataKey]
		documents[name] = document
		if !consumers.seen(consumers.submitted, namespace, name, document) {
			fresh = append(fresh, name)
		}
	}
	for i, name := range fresh {
		start := time.Now()
		accepted, err := consumers.Ironic.Accept(ctx, namespace, name, documents[name])
		if err != nil {
			Fail(fmt.Sprintf("Ironic's API must take the network data of host %s as BMO hands it over: %v", name, err))
		}
		consumers.record(&consumers.submissions, time.Since(start))
		if i == 0 {
			if err := consumers.Ironic.RefusesBroken(ctx, accepted); err != nil {
				Fail(err.Error())
			}
		}
		consumers.mark(consumers.submitted, namespace, name, documents[name])
	}

	converted := 0
	for _, name := range sampled(hosts) {
		if converted == cloudInitPerCall || consumers.seen(consumers.converted, namespace, name, documents[name]) {
			continue
		}
		start := time.Now()
		dir := filepath.Join(consumers.artifacts, namespace, name)
		if err := cloudinit.Check(ctx, documents[name], dir); err != nil {
			Fail(fmt.Sprintf("host %s: %v", name, err))
		}
		consumers.record(&consumers.conversions, time.Since(start))
		consumers.mark(consumers.converted, namespace, name, documents[name])
		converted++
	}
}

// sampled puts the first and the last host ahead of the others.
func sampled(hosts []string) []string {
	if len(hosts) < 3 {
		return hosts
	}
	order := []string{hosts[0], hosts[len(hosts)-1]}
	return append(order, hosts[1:len(hosts)-1]...)
}

func documentKey(namespace, host string, document []byte) string {
	sum := sha256.Sum256(document)
	return namespace + "/" + host + "/" + hex.EncodeToString(sum[:])
}

func (c *Consumers) seen(checked map[string]bool, namespace, host string, document []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return checked[documentKey(namespace, host, document)]
}

func (c *Consumers) mark(checked map[string]bool, namespace, host string, document []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	checked[documentKey(namespace, host, document)] = true
}

func (c *Consumers) record(timings *[]time.Duration, took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*timings = append(*timings, took)
}

// Report says how many documents each consumer checked and how long that
// took.
func (c *Consumers) Report() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("Ironic took %s; cloud-init converted %s", timingSummary(c.submissions), timingSummary(c.conversions))
}

func timingSummary(timings []time.Duration) string {
	if len(timings) == 0 {
		return "no document"
	}
	var total, longest time.Duration
	for _, took := range timings {
		total += took
		longest = max(longest, took)
	}
	return fmt.Sprintf("%d documents (mean %s, longest %s)", len(timings),
		(total / time.Duration(len(timings))).Round(time.Millisecond), longest.Round(time.Millisecond))
}
