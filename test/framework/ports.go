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

package framework

import (
	"context"
	"fmt"
	"net"
)

// FreePort asks the kernel for a free port on the loopback address, for a
// server a test starts there.
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreePorts asks the kernel for n distinct free ports on the loopback
// address. Each is held until all are chosen: a port closed at once may be
// handed out again by the next ask, and two servers given the same port
// leave one of them unable to start.
func FreePorts(n int) ([]int, error) {
	var config net.ListenConfig
	ports := make([]int, 0, n)
	var listeners []net.Listener
	defer func() {
		// The servers the ports are for bind them once they are free again.
		for _, listener := range listeners {
			_ = listener.Close() // the port is still free to bind if its close failed
		}
	}()
	for range n {
		listener, err := config.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, listener)
		address, isTCP := listener.Addr().(*net.TCPAddr)
		if !isTCP {
			return nil, fmt.Errorf("listening on %s: not a TCP address", listener.Addr())
		}
		ports = append(ports, address.Port)
	}
	return ports, nil
}
