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
	var config net.ListenConfig
	listener, err := config.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	address, isTCP := listener.Addr().(*net.TCPAddr)
	// The server the port is for binds it once it is free again.
	if err = listener.Close(); err != nil {
		return 0, err
	}
	if !isTCP {
		return 0, fmt.Errorf("listening on %s: not a TCP address", listener.Addr())
	}
	return address.Port, nil
}
