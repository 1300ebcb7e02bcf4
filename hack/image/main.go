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

// Command image builds the manager's container image from a static manager
// binary, without a container engine or a registry: the Dockerfile's image
// (a non-root /manager on an otherwise empty, distroless-like file system),
// written as a docker-save archive that docker load, podman load and
// kind load image-archive accept.
//
//	go run ./hack/image -binary bin/manager -image quay.io/capm3-preprov/capm3-preprov:dev -out out/image.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// NonRootUser is distroless's nonroot user, as the Dockerfile's USER.
const NonRootUser = "65532:65532"

func main() {
	binary := flag.String("binary", "bin/manager", "The static manager binary (CGO_ENABLED=0) to put at /manager.")
	image := flag.String("image", "quay.io/capm3-preprov/capm3-preprov:dev", "The image's repository and tag, IMG:TAG.")
	out := flag.String("out", "out/capm3-preprov-image.tar", "The docker-save archive to write.")
	arch := flag.String("arch", runtime.GOARCH, "The binary's architecture (GOARCH).")
	revision := flag.String("revision", "", "The source revision (git commit), for the org.opencontainers.image.revision label.")
	flag.Parse()

	created, err := sourceDate()
	if err == nil {
		err = build(*binary, *image, *out, *arch, *revision, created)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("image: wrote %s (%s)\n", *out, *image)
}

func build(binary, image, out, arch, revision string, created time.Time) error {
	tag, err := name.NewTag(image)
	if err != nil {
		return fmt.Errorf("-image %q is not IMG:TAG: %w", image, err)
	}
	if !strings.HasSuffix(image, ":"+tag.TagStr()) {
		return fmt.Errorf("-image %q is not IMG:TAG", image)
	}
	manager, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	layer, err := rootFS(manager, created)
	if err != nil {
		return err
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint: []string{"/manager"},
			User:       NonRootUser,
			WorkingDir: "/",
			Labels:     labels(tag.TagStr(), revision),
		},
	})
	if err != nil {
		return err
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "hack/image: /manager and /tmp"},
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}

// rootFS is the image's only layer: /manager, owned by root and executable
// by all, and a world-writable /tmp as distroless has.
func rootFS(manager []byte, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: created,
	}); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: "manager", Mode: 0o755, Size: int64(len(manager)), ModTime: created,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(manager); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerTar := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
}

// labels are the OCI annotations Metal3's images carry.
func labels(version, revision string) map[string]string {
	labels := map[string]string{
		"org.opencontainers.image.title":       "capm3-preprov",
		"org.opencontainers.image.description": "DHCP-less pre-provisioning network data for Metal3 BareMetalHosts",
		"org.opencontainers.image.source":      "https://github.com/capm3-preprov/capm3-preprov",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     version,
	}
	if revision = strings.TrimSpace(revision); revision != "" {
		labels["org.opencontainers.image.revision"] = revision
	}
	return labels
}

// sourceDate is the time stamped on the image and its files: SOURCE_DATE_EPOCH
// when set, else the Unix epoch, so that the same binary gives the same image.
func sourceDate() (time.Time, error) {
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	seconds, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q is not seconds since the epoch: %w", epoch, err)
	}
	return time.Unix(seconds, 0).UTC(), nil
}
