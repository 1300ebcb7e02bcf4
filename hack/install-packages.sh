#!/usr/bin/env bash
# Installs the Debian packages the tests run on the machine itself:
# cloud-init (its net-convert reads network_data the way the deploy ramdisk
# and the OS do), python3-jsonschema, genisoimage (isoinfo reads the
# virtual-media ISO Ironic builds, in the Redfish BMC stand-in),
# python3-ironic (only for Ironic's network_data schema file, which the pure
# tests of what we render check against: Ironic 29's file but for one bond
# mode's name, which test/consumers/networkdataschema renames), and
# podman with runc, which load and run the manager's image (test/image; runc
# because crun cannot run containers under a hybrid cgroup v1/v2 layout).
# Ironic itself (29) and ironic-python-agent run from the Debian 13 root
# hack/debian13-root.sh builds, not from these packages.
#
#   hack/install-packages.sh          install what is missing (root, or sudo)
#   hack/install-packages.sh --check  only say what is missing; exit 1 if any
#   hack/install-packages.sh --auto   what make test runs: install what is
#                                     missing on Debian or Ubuntu (root, or
#                                     sudo), elsewhere name it; exit 1 then
#
# Quick when everything is installed: no apt-get at all then.
set -euo pipefail

packages=(python3-ironic genisoimage cloud-init python3-jsonschema podman runc)

missing=()
for package in "${packages[@]}"; do
	if [ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" != "install ok installed" ]; then
		missing+=("$package")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "${1:-}" = "--check" ]; then
	echo "missing Debian packages: ${missing[*]}; the tests run cloud-init, isoinfo and the manager's image and read Ironic's schema with them." >&2
	echo "install them with: hack/install-packages.sh (as root, or with sudo)" >&2
	exit 1
fi

# debian_like is true on Debian, Ubuntu and their derivatives with apt-get.
debian_like() {
	[ -r /etc/os-release ] && command -v apt-get >/dev/null || return 1
	local id id_like
	id=$(. /etc/os-release && echo "${ID:-}")
	id_like=$(. /etc/os-release && echo "${ID_LIKE:-}")
	case " $id $id_like " in
	*" debian "* | *" ubuntu "*) return 0 ;;
	esac
	return 1
}

if [ "${1:-}" = "--auto" ] && { ! debian_like || { [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; }; }; then
	echo "missing packages: ${missing[*]} (their Debian names); the tests run cloud-init, isoinfo and the manager's image and read Ironic's schema with them." >&2
	echo "this machine is not Debian or Ubuntu with root or sudo: install them with its package manager, then run make test again" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi
echo "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
