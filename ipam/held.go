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

package ipam

import (
	"context"
	"fmt"
	"maps"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// AddressUsers are what may still use a host's addresses besides its
// claims: its Secret, and the machine that booted with what it held.
type AddressUsers struct {
	// NetworkData is what the host's Secret holds; nil when it has none.
	NetworkData []byte
	// Machine tells whether the host's machine (its OS, or its deploy
	// ramdisk under Ironic's fast track) may still run with network data
	// its Secret held before since, and what ends that; nil for a host no
	// machine ever ran with our data.
	Machine func(since time.Time) (inUse bool, until string)
}

// Held is a claim of the host's that its network data no longer names,
// kept because its machine may still run with the address.
type Held struct {
	// Kind is IPClaim or IPAddressClaim.
	Kind, Claim string
	Pool        networkdata.Pool
	// Until says which machine may use it and what releases it.
	Until string
}

func (h Held) String() string {
	return fmt.Sprintf("%s %q on %s is kept: %s", h.Kind, h.Claim, h.Pool, h.Until)
}

// holdForMachine keeps a claim the host's network data no longer names while
// the host's machine may still run with its address. The time the network
// data stopped naming it is recorded on the claim the first time (with what
// it waits for), so the machine's later boots are told from earlier ones;
// nil when the claim may go.
func (c *Claims) holdForMachine(ctx context.Context, claim client.Object, held Held, users AddressUsers) (*Held, error) {
	if users.Machine == nil {
		return nil, nil
	}
	since, marked := UnusedSince(claim)
	if !marked {
		since = c.clock().Now().UTC().Truncate(time.Second)
	}
	inUse, until := users.Machine(since)
	if !inUse {
		return nil, nil
	}
	held.Until = until
	annotations := map[string]string{
		preprovv1.UnusedSinceAnnotation: since.Format(time.RFC3339),
		preprovv1.HeldForAnnotation:     until,
	}
	if err := c.annotate(ctx, claim, annotations); err != nil {
		return nil, fmt.Errorf("recording on %s %s/%s that the host's machine may still use its address: %w", held.Kind,
			claim.GetNamespace(), claim.GetName(), err)
	}
	return &held, nil
}

// clearUnusedSince forgets when the network data stopped naming a claim's
// address once it names it again: the machine's next boot uses it, so a
// later release must count from a later time.
func (c *Claims) clearUnusedSince(ctx context.Context, claim client.Object) error {
	if _, marked := claim.GetAnnotations()[preprovv1.UnusedSinceAnnotation]; !marked {
		return nil
	}
	if err := c.annotate(ctx, claim, map[string]string{preprovv1.UnusedSinceAnnotation: "", preprovv1.HeldForAnnotation: ""}); err != nil {
		return fmt.Errorf("clearing on %s/%s when the network data stopped naming its address: %w", claim.GetNamespace(),
			claim.GetName(), err)
	}
	return nil
}

// annotate sets annotations on a claim (an empty value removes one), with
// one patch fenced on the claim's version, and none when nothing changes.
func (c *Claims) annotate(ctx context.Context, claim client.Object, annotations map[string]string) error {
	current := claim.GetAnnotations()
	updated := maps.Clone(current)
	if updated == nil {
		updated = map[string]string{}
	}
	for key, value := range annotations {
		if value == "" {
			delete(updated, key)
		} else {
			updated[key] = value
		}
	}
	if maps.Equal(current, updated) {
		return nil
	}
	original, ok := claim.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("a copy of %T is not an object", claim)
	}
	claim.SetAnnotations(updated)
	return c.Client.Patch(ctx, claim, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{}))
}

// UnusedSince is when the host's network data stopped naming the claim's
// address, as recorded on the claim; false when nothing is recorded or the
// record is unreadable (then it counts from now: later, never earlier).
func UnusedSince(claim client.Object) (time.Time, bool) {
	since, err := time.Parse(time.RFC3339, claim.GetAnnotations()[preprovv1.UnusedSinceAnnotation])
	return since, err == nil
}
