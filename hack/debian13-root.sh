#!/usr/bin/env bash
# Builds the Debian 13 (trixie) root the tests run Ironic 29 (every test that
# talks to Ironic: test/consumers/ironic) and the real ironic-python-agent
# (test/consumers/agent, the e2e story) from, once per machine: bin/ is shared by every
# clone and worktree, so the root lives at bin/debian13-root and a stamp file
# beside it records what it was built from (suite, variant, packages). The
# root is rebuilt only when that record changes.
#
#   hack/debian13-root.sh          build the root if missing or stale (root)
#   hack/debian13-root.sh --check  exit 1 if the root is missing or stale
#
# mmdebstrap fetches from the Debian mirror this machine's apt uses (its
# sources), through the proxy apt is configured with, if any; set
# DEBIAN13_MIRROR to use another one. The build takes 10-50 minutes and about
# 1.4 GB; a rebuild happens beside the old root and replaces it only when it
# has finished, and concurrent runs wait for each other.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=$(pwd -P)/bin
ROOT_DIR=${DEBIAN13_ROOT:-$BIN/debian13-root}
STAMP=$ROOT_DIR.stamp

suite=trixie
variant=apt
# The issue's list, plus what Ironic builds a virtual-media ISO with (isolinux
# and syslinux-common for BIOS, grub-efi-amd64-bin, dosfstools and mtools for
# a UEFI ESP, genisoimage and xorriso), sushy for Redfish, and util-linux for
# unshare, mount and lsblk.
packages=(ironic-api ironic-conductor ironic-python-agent python3-ironicclient iproute2 cloud-init
	isolinux syslinux-common grub-efi-amd64-bin dosfstools mtools genisoimage xorriso python3-sushy util-linux)

wanted_stamp() {
	printf 'suite=%s\nvariant=%s\npackages=%s\n' "$suite" "$variant" "${packages[*]}"
}

fresh() {
	[ -x "$ROOT_DIR/usr/bin/ironic-api" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(wanted_stamp)" ]
}

# Debian's backport of the CVE-2026-44918 fix (ironic 1:29.0.5-0+deb13u3 and
# u4) sets a node's parent_node to the node itself on every PATCH, after
# which powering it on fails ("parent_node ... is presently locked").
# Upstream's patch (d7ad21698) only sets it when it names another node; this
# applies that guard to the root's copy, once.
NODE_API=$ROOT_DIR/usr/lib/python3/dist-packages/ironic/api/controllers/v1/node.py
fix_parent_node() {
	grep -q "if parent_node.uuid != rpc_node.uuid:" "$NODE_API" && return 0
	sed -i "s/^            corrected_values\['parent_node'\] = parent_node.uuid$/            if parent_node.uuid != rpc_node.uuid:\n                corrected_values['parent_node'] = parent_node.uuid/" "$NODE_API"
	grep -q "if parent_node.uuid != rpc_node.uuid:" "$NODE_API"
}

if fresh && grep -q "if parent_node.uuid != rpc_node.uuid:" "$NODE_API"; then
	exit 0
fi
if fresh && [ "${1:-}" != "--check" ]; then
	fix_parent_node
	exit 0
fi
if [ "${1:-}" = "--check" ]; then
	echo "the Debian 13 root $ROOT_DIR is missing or built from another package list: run hack/debian13-root.sh (as root)" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "hack/debian13-root.sh builds a chroot with mmdebstrap and must run as root" >&2
	exit 1
fi

# debian_mirror prints the URI of the first Debian archive (not its security
# archive) in this machine's apt sources, deb822 or one-line format.
debian_mirror() {
	local uri
	uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ { print $2 }' | grep -v -- '-security' | grep '/debian/*$' | head -n1 || true)
	if [ -z "$uri" ]; then
		uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; break } }' | grep -v -- '-security' | grep '/debian/*$' | head -n1 || true)
	fi
	echo "${uri:-http://deb.debian.org/debian}"
}

mirror=${DEBIAN13_MIRROR:-$(debian_mirror)}
apt_options=()
for scheme in http https; do
	proxy=$(apt-config dump "Acquire::$scheme::Proxy" 2>/dev/null | awk -v key="Acquire::$scheme::Proxy" '$1 == key { gsub(/[";]/, "", $2); print $2 }')
	if [ -n "$proxy" ]; then
		apt_options+=(--aptopt="Acquire::$scheme::Proxy \"$proxy\"")
	fi
done

if ! command -v mmdebstrap >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -o DPkg::Lock::Timeout=1800 mmdebstrap
fi

mkdir -p "$BIN"
exec 9>"$ROOT_DIR.lock"
flock 9
if fresh; then
	exit 0
fi

building=$ROOT_DIR.building
rm -rf "$building"
echo "building the Debian 13 root in $ROOT_DIR from $mirror (${packages[*]})"
start=$(date +%s)
mmdebstrap --variant="$variant" --include="$(
	IFS=,
	echo "${packages[*]}"
)" "${apt_options[@]}" "$suite" "$building" "$mirror"
rm -rf "$ROOT_DIR" "$STAMP"
mv "$building" "$ROOT_DIR"
fix_parent_node
wanted_stamp >"$STAMP"
echo "built $ROOT_DIR in $(($(date +%s) - start)) s"
