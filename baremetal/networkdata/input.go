package networkdata

// Address is what one Metal3 IPAM IPAddress gives the host
// (spec.address, spec.prefix, spec.gateway, spec.dnsServers).
type Address struct {
	IP         string
	Prefix     int
	Gateway    string // may be empty
	DNSServers []string
}

// NIC is one entry of BareMetalHost status.hardware.nics.
type NIC struct{ Name, MAC string }

// Host is what the renderer knows about the BareMetalHost.
type Host struct {
	Name, Namespace string
	Annotations     map[string]string
	BootMACAddress  string
	NICs            []NIC // empty before inspection
}
