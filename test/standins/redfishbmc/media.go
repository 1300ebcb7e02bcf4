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

package redfishbmc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// NetworkDataPath is where a config drive keeps the network data (the
// OpenStack format), and where Ironic writes the node's network_data into
// the ISO it builds (image_utils.prepare_deploy_iso).
const NetworkDataPath = "/openstack/latest/network_data.json"

// isolinuxConfig is the boot loader's configuration in Ironic's BIOS ISO
// (images.create_isolinux_image_for_bios); its append line is the kernel
// command line.
const isolinuxConfig = "/isolinux/isolinux.cfg"

// Media is the ISO in a host's virtual CD, read as the host would boot it.
type Media struct {
	// Image is the URL Ironic inserted.
	Image string
	// File is the fetched ISO.
	File string
	// VolumeID is the ISO's volume label; "config-2" marks a config drive.
	VolumeID string
	// NetworkData is the file at NetworkDataPath, nil if the ISO has none.
	NetworkData []byte
	// KernelParams are the parameters of the isolinux append line, by name
	// (ipa-api-url, boot_method, ...); a parameter without a value maps to "".
	KernelParams map[string]string
	// Err says why the ISO could not be fetched or read.
	Err error
}

// readMedia fetches the ISO into folder and reads it with isoinfo.
func readMedia(ctx context.Context, image, folder, host string) *Media {
	media := &Media{Image: image}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		media.Err = err
		return media
	}
	media.File = filepath.Join(folder, host+".iso")
	if media.Err = fetch(ctx, image, media.File); media.Err != nil {
		return media
	}
	media.VolumeID, media.Err = volumeID(ctx, media.File)
	if media.Err != nil {
		return media
	}
	config, err := isoFile(ctx, media.File, isolinuxConfig)
	if err == nil && config == nil {
		err = fmt.Errorf("the ISO %s has no %s: not a BIOS ISO of Ironic's", media.File, isolinuxConfig)
	}
	if err != nil {
		media.Err = err
		return media
	}
	media.KernelParams = appendParams(string(config))
	media.NetworkData, media.Err = isoFile(ctx, media.File, NetworkDataPath)
	return media
}

func fetch(ctx context.Context, url, file string) error {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return fmt.Errorf("fetching the inserted image %s: %w", url, err)
	}
	defer func() { _ = response.Body.Close() }()
	if response.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching the inserted image %s: HTTP %s", url, response.Status)
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err = io.Copy(out, response.Body); err != nil {
		_ = out.Close()
		return fmt.Errorf("fetching the inserted image %s: %w", url, err)
	}
	return out.Close()
}

// volumeID reads the ISO's primary volume descriptor with isoinfo -d.
func volumeID(ctx context.Context, iso string) (string, error) {
	out, err := isoinfo(ctx, "-d", "-i", iso)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if id, ok := strings.CutPrefix(line, "Volume id: "); ok {
			return strings.TrimSpace(id), nil
		}
	}
	return "", fmt.Errorf("isoinfo -d names no volume id for %s", iso)
}

// isoFile extracts one file by its Rock Ridge path (Ironic's mkisofs -r);
// nil when the ISO has no such file (isoinfo -x then prints nothing).
func isoFile(ctx context.Context, iso, path string) ([]byte, error) {
	out, err := isoinfo(ctx, "-R", "-i", iso, "-x", path)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return out, nil
}

func isoinfo(ctx context.Context, args ...string) ([]byte, error) {
	if _, err := exec.LookPath("isoinfo"); err != nil {
		return nil, fmt.Errorf("isoinfo is not installed (Debian package genisoimage; hack/install-packages.sh installs it): %w", err)
	}
	out, err := exec.CommandContext(ctx, "isoinfo", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("isoinfo %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// appendParams reads the kernel parameters of the first append line of an
// isolinux configuration.
func appendParams(config string) map[string]string {
	params := map[string]string{}
	for line := range strings.SplitSeq(config, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.EqualFold(fields[0], "append") {
			continue
		}
		for _, field := range fields[1:] {
			name, value, _ := strings.Cut(field, "=")
			params[name] = value
		}
		break
	}
	return params
}
