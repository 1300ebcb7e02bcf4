// Package networkdata renders the OpenStack network_data document of a
// BareMetalHost from a CAPM3 Metal3DataTemplate's spec.networkData and the
// addresses claimed from Metal3 IPAM IPPools.
//
// The document is, as data, the one CAPM3's Metal3Data controller renders
// (renderNetworkData in CAPM3's baremetal/metal3data_manager.go, v1.13): the
// same keys, list order, netmask spelling and empty lists. It differs only
// where no Machine exists yet: before provisioning the only object the
// template may read is the BareMetalHost, and a host that was not inspected
// yet has no NIC list, so fromHostInterface can only fall back to the boot MAC.
//
// The package is pure: no Kubernetes client, no I/O. PoolNames tells the
// caller which IPPools to claim addresses from; Render produces the bytes.
package networkdata
