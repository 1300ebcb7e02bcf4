package envtest

import "net"

// FreePort asks the kernel for a free port on the loopback address, for a
// server a test starts there.
func FreePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}
