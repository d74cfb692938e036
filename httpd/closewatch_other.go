//go:build !linux

package httpd

import (
	"errors"
	"net"
)

// closeWatch has no implementation here: without one, parking.listen
// leaves every pop to wait inside net/http.
type closeWatch struct{}

type watchEvent uint8

const (
	hungUp watchEvent = 1 << iota
	readable
)

func newCloseWatch() (*closeWatch, error) {
	return nil, errors.New("closeWatch: not on this system")
}

func (*closeWatch) add(net.Conn, func()) (int32, error) {
	return -1, errors.New("closeWatch: not on this system")
}
func (*closeWatch) remove(int32) {}
func (*closeWatch) stop()        {}
