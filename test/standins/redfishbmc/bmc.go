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

// Package redfishbmc is a stand-in for the Redfish BMCs of bare metal hosts,
// one HTTP server on loopback playing the BMC of every host a test adds.
// It serves what Ironic's redfish hardware type (Ironic 29 here; first
// written against 21.4 and sushy 4.3) asks through sushy for a node with
// boot interface redfish-virtual-media, inspect interface agent and
// power/management redfish, in the shapes of the DMTF Redfish schema (ServiceRoot, ComputerSystemCollection,
// ComputerSystem v1, ManagerCollection, Manager, VirtualMediaCollection,
// VirtualMedia v1):
//
//   - GET /redfish/v1/ (sushy.Sushy: the service root, Systems and Managers);
//   - GET /redfish/v1/Systems/<host> (redfish_utils.get_system: PowerState,
//     Boot with its allowable values, Links.ManagedBy);
//   - POST .../Actions/ComputerSystem.Reset with ResetType (power off before
//     the ISO is built, on after: manager_utils.node_power_action);
//   - PATCH /redfish/v1/Systems/<host> with Boot.BootSourceOverrideTarget,
//     ...Enabled and ...Mode (boot.py _set_boot_device, sync_boot_mode);
//   - GET /redfish/v1/Managers/<host>/VirtualMedia/Cd and the POSTs of its
//     actions #VirtualMedia.InsertMedia (Image, Inserted, WriteProtected)
//     and #VirtualMedia.EjectMedia (boot.py _insert_vmedia, _eject_vmedia).
//
// Each host is one ComputerSystem managed by one Manager of the same id.
// What it does not serve (EthernetInterfaces, SessionService, BIOS) sushy
// reports as missing and Ironic goes on without it (basic authentication,
// no ports created from the BMC). What a BMC does with an inserted CD is
// played by reading it: on InsertMedia the stand-in fetches the ISO Ironic
// built and reads the config drive's openstack/latest/network_data.json
// and the kernel command line of isolinux/isolinux.cfg with isoinfo
// (genisoimage), so a test sees what the host's ramdisk would boot with.
package redfishbmc

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// systemsPath is where the systems are, and where BMO's redfish address
// points (its path is the node's redfish_system_id).
const systemsPath = "/redfish/v1/Systems/"

const managersPath = "/redfish/v1/Managers/"

// Host is what the BMC of one host shows and was told.
type Host struct {
	// PowerState is "On" or "Off", changed by ComputerSystem.Reset.
	PowerState string
	// BootTarget, BootEnabled and BootMode are the boot source override,
	// as Ironic last patched them.
	BootTarget, BootEnabled, BootMode string
	// Media is the CD in the virtual drive, nil when empty.
	Media *Media
	// Inserts counts the InsertMedia actions.
	Inserts int
}

// BMC is the HTTP server playing every host's BMC.
type BMC struct {
	// URL is the server's root, http://127.0.0.1:<port>.
	URL string

	server   *http.Server
	served   chan error
	mu       sync.Mutex
	hosts    map[string]*Host
	isoFiles string
}

// Start serves the BMC on a free loopback port; isoFolder keeps the ISOs
// fetched on InsertMedia (the test's artifacts).
func Start(isoFolder string) (*BMC, error) {
	listener, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the Redfish BMC stand-in could not listen on loopback: %w", err)
	}
	b := &BMC{URL: "http://" + listener.Addr().String(), hosts: map[string]*Host{}, isoFiles: isoFolder, served: make(chan error, 1)}
	b.server = &http.Server{Handler: http.HandlerFunc(b.serve), ReadHeaderTimeout: 10 * time.Second}
	// One request per connection: sushy's pooled connections once hung on
	// a BMC that kept them alive.
	b.server.SetKeepAlivesEnabled(false)
	go func() { b.served <- b.server.Serve(listener) }()
	return b, nil
}

// Stop closes the server.
func (b *BMC) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.server.Shutdown(ctx); err != nil {
		return err
	}
	if err := <-b.served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// AddHost gives a host a BMC, powered off, and returns the BMC address a
// BareMetalHost names it by (spec.bmc.address).
func (b *BMC) AddHost(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hosts[id] = &Host{PowerState: "Off", BootTarget: "None", BootEnabled: "Disabled", BootMode: "Legacy"}
	return "redfish-virtualmedia+" + b.URL + systemsPath + id
}

// Host returns a copy of what the host's BMC shows, and whether it exists.
func (b *BMC) Host(id string) (Host, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	host, ok := b.hosts[id]
	if !ok {
		return Host{}, false
	}
	return *host, true
}

// serve routes a request to the resource it names.
func (b *BMC) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/redfish/v1":
		writeJSON(w, serviceRoot())
	case path == strings.TrimSuffix(systemsPath, "/"):
		writeJSON(w, b.collection(systemsPath, "#ComputerSystemCollection.ComputerSystemCollection"))
	case path == strings.TrimSuffix(managersPath, "/"):
		writeJSON(w, b.collection(managersPath, "#ManagerCollection.ManagerCollection"))
	case strings.HasPrefix(path, systemsPath):
		b.serveSystem(w, r, strings.Split(strings.TrimPrefix(path, systemsPath), "/"))
	case strings.HasPrefix(path, managersPath):
		b.serveManager(w, r, strings.Split(strings.TrimPrefix(path, managersPath), "/"))
	default:
		writeError(w, http.StatusNotFound, "no resource at "+path)
	}
}

func (b *BMC) serveSystem(w http.ResponseWriter, r *http.Request, parts []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	host, ok := b.hosts[parts[0]]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "no system "+parts[0])
	case len(parts) == 1 && r.Method == http.MethodGet:
		writeJSON(w, computerSystem(parts[0], host))
	case len(parts) == 1 && r.Method == http.MethodPatch:
		b.patchBoot(w, r, host)
	case len(parts) == 3 && parts[2] == "ComputerSystem.Reset" && r.Method == http.MethodPost:
		reset(w, r, host)
	default:
		writeError(w, http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path)
	}
}

func (b *BMC) serveManager(w http.ResponseWriter, r *http.Request, parts []string) {
	b.mu.Lock()
	host, ok := b.hosts[parts[0]]
	b.mu.Unlock()
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "no manager "+parts[0])
	case len(parts) == 1 && r.Method == http.MethodGet:
		writeJSON(w, manager(parts[0]))
	case len(parts) == 2 && parts[1] == "VirtualMedia" && r.Method == http.MethodGet:
		writeJSON(w, map[string]any{
			"@odata.id": managersPath + parts[0] + "/VirtualMedia", "@odata.type": "#VirtualMediaCollection.VirtualMediaCollection",
			"Name": "Virtual Media", "Members@odata.count": 1,
			"Members": []any{odataID(managersPath + parts[0] + "/VirtualMedia/Cd")},
		})
	case len(parts) == 3 && parts[2] == "Cd" && r.Method == http.MethodGet:
		b.mu.Lock()
		defer b.mu.Unlock()
		writeJSON(w, virtualCD(parts[0], host.Media))
	case len(parts) == 5 && parts[2] == "Cd" && parts[4] == "VirtualMedia.InsertMedia" && r.Method == http.MethodPost:
		b.insertMedia(w, r, parts[0])
	case len(parts) == 5 && parts[2] == "Cd" && parts[4] == "VirtualMedia.EjectMedia" && r.Method == http.MethodPost:
		b.mu.Lock()
		defer b.mu.Unlock()
		host.Media = nil
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path)
	}
}

// patchBoot takes the boot source override Ironic sets before it powers
// the host on.
func (b *BMC) patchBoot(w http.ResponseWriter, r *http.Request, host *Host) {
	var patch struct {
		Boot map[string]string `json:"Boot"`
	}
	if err := json.NewDecoder(r.Body).Decode(&patch); err != nil || patch.Boot == nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("a system's PATCH must carry Boot: %v", err))
		return
	}
	for field, value := range patch.Boot {
		switch field {
		case "BootSourceOverrideTarget":
			host.BootTarget = value
		case "BootSourceOverrideEnabled":
			host.BootEnabled = value
		case "BootSourceOverrideMode":
			host.BootMode = value
		default:
			writeError(w, http.StatusBadRequest, "Boot."+field+" cannot be patched here")
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// reset applies a ComputerSystem.Reset at once, so Ironic's wait for the
// power state ends at its first look.
func reset(w http.ResponseWriter, r *http.Request, host *Host) {
	var action struct {
		ResetType string `json:"ResetType"`
	}
	if err := json.NewDecoder(r.Body).Decode(&action); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	switch action.ResetType {
	case "On", "ForceOn", "ForceRestart", "GracefulRestart":
		host.PowerState = "On"
	case "ForceOff", "GracefulShutdown":
		host.PowerState = "Off"
	default:
		writeError(w, http.StatusBadRequest, "unknown ResetType "+action.ResetType)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// insertMedia reads the ISO it is given before it answers, as a BMC that
// mounts it would fetch it; a failure to read it is recorded on the Media,
// not refused, so the test reports it with the host.
func (b *BMC) insertMedia(w http.ResponseWriter, r *http.Request, id string) {
	var action struct {
		Image string `json:"Image"`
	}
	if err := json.NewDecoder(r.Body).Decode(&action); err != nil || action.Image == "" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("InsertMedia needs an Image: %v", err))
		return
	}
	media := readMedia(r.Context(), action.Image, b.isoFiles, id)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hosts[id].Media = media
	b.hosts[id].Inserts++
	w.WriteHeader(http.StatusNoContent)
}

func (b *BMC) collection(prefix, odataType string) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	members := []any{}
	for id := range b.hosts {
		members = append(members, odataID(prefix+id))
	}
	return map[string]any{
		"@odata.id": strings.TrimSuffix(prefix, "/"), "@odata.type": odataType,
		"Name": "Collection", "Members@odata.count": len(members), "Members": members,
	}
}

func serviceRoot() map[string]any {
	return map[string]any{
		"@odata.id": "/redfish/v1/", "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot",
		"Id": "RootService", "Name": "capm3-preprov Redfish BMC stand-in", "RedfishVersion": "1.5.0",
		"UUID":     "8c3ee9a4-3a53-4e3e-9d37-7b1d2f6f1a01",
		"Systems":  odataID(strings.TrimSuffix(systemsPath, "/")),
		"Managers": odataID(strings.TrimSuffix(managersPath, "/")),
	}
}

func computerSystem(id string, host *Host) map[string]any {
	return map[string]any{
		"@odata.id": systemsPath + id, "@odata.type": "#ComputerSystem.v1_10_0.ComputerSystem",
		"Id": id, "Name": id, "UUID": hostUUID(id), "PowerState": host.PowerState,
		"Status": map[string]any{"State": "Enabled", "Health": "OK"},
		"Boot": map[string]any{
			"BootSourceOverrideTarget":                         host.BootTarget,
			"BootSourceOverrideEnabled":                        host.BootEnabled,
			"BootSourceOverrideMode":                           host.BootMode,
			"BootSourceOverrideTarget@Redfish.AllowableValues": []string{"None", "Pxe", "Cd", "Hdd", "BiosSetup"},
			"BootSourceOverrideMode@Redfish.AllowableValues":   []string{"Legacy", "UEFI"},
		},
		"Actions": map[string]any{
			"#ComputerSystem.Reset": map[string]any{
				"target":                            systemsPath + id + "/Actions/ComputerSystem.Reset",
				"ResetType@Redfish.AllowableValues": []string{"On", "ForceOff", "GracefulShutdown", "ForceRestart", "GracefulRestart", "ForceOn"},
			},
		},
		"Links": map[string]any{"ManagedBy": []any{odataID(managersPath + id)}},
	}
}

func manager(id string) map[string]any {
	return map[string]any{
		"@odata.id": managersPath + id, "@odata.type": "#Manager.v1_5_0.Manager",
		"Id": id, "Name": id + " BMC", "ManagerType": "BMC", "FirmwareVersion": "1.0",
		"Status":       map[string]any{"State": "Enabled", "Health": "OK"},
		"VirtualMedia": odataID(managersPath + id + "/VirtualMedia"),
		"Links":        map[string]any{"ManagerForServers": []any{odataID(systemsPath + id)}},
	}
}

func virtualCD(id string, media *Media) map[string]any {
	path := managersPath + id + "/VirtualMedia/Cd"
	cd := map[string]any{
		"@odata.id": path, "@odata.type": "#VirtualMedia.v1_3_0.VirtualMedia",
		"Id": "Cd", "Name": "Virtual CD", "MediaTypes": []string{"CD", "DVD"},
		"ConnectedVia": "URI", "Inserted": media != nil, "WriteProtected": true, "Image": nil,
		"Actions": map[string]any{
			"#VirtualMedia.InsertMedia": map[string]any{"target": path + "/Actions/VirtualMedia.InsertMedia"},
			"#VirtualMedia.EjectMedia":  map[string]any{"target": path + "/Actions/VirtualMedia.EjectMedia"},
		},
	}
	if media != nil {
		cd["Image"] = media.Image
	}
	return cd
}

// hostUUID is a stable UUID per host id (from its SHA-256), as a BMC
// reports its system's.
func hostUUID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

func odataID(path string) map[string]any {
	return map[string]any{"@odata.id": path}
}

func writeJSON(w http.ResponseWriter, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body) //nolint:errchkjson // the body is maps of strings, lists and numbers; a failed write is the client's
}

// writeError answers in the Redfish error format, which sushy quotes.
func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{ //nolint:errchkjson // strings only; a failed write is the client's
		"error": map[string]any{"code": "Base.1.0.GeneralError", "message": message},
	})
}
